/// The bash completion script swift-argument-parser generates for `haul`, with its subcommands made
/// reachable.
///
/// `haul` takes any number of URLs as positionals and also has subcommands (`daemon`, `queue`). The
/// generated `_haul` first consumes every word that is not an option as one of those positionals, so the
/// dispatch to `_haul_queue` that follows never sees `queue`: `haul queue <Tab>` offered the top-level words
/// and `haul queue a<Tab>` nothing. The patch sends a first word that names a subcommand to that
/// subcommand's function before the positionals are counted, as ArgumentParser itself parses it.
public enum BashCompletionScript {
    /// The line of `_haul` that consumes the positionals.
    static let positionalsLine = "    __haul_offer_flags_options -1\n"

    /// `script` with the dispatch inserted, or `script` unchanged when it is not the script this patch was
    /// written for (a CLI test runs the result in bash, so a change of the generator is noticed).
    public static func patched(_ script: String, subcommands: [String]) -> String {
        guard let function = script.firstRange(of: "\n_haul() {\n"),
              let line = script[function.upperBound...].firstRange(of: positionalsLine) else { return script }
        let names = subcommands.joined(separator: " ")
        let dispatch = """
                # Added by haul (BashCompletionScript): a first word that names a subcommand completes as that
                # subcommand, before haul's URLs (any number of positionals) would consume it.
                if [[ "${#unparsed_words[@]}" -gt 1 && " \(names) " = *" ${unparsed_words[0]} "* ]]; then
                    local -r named_subcommand="${unparsed_words[0]}"
                    unset 'unparsed_words[0]'
                    unparsed_words=("${unparsed_words[@]}")
                    "_haul_${named_subcommand}"
                    return
                fi

            """
        var result = script
        result.insert(contentsOf: dispatch, at: line.lowerBound)
        return result
    }
}
