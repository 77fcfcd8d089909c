import HaulCommandLine
import Testing

/// The patch that lets bash completion reach haul's subcommands (the CLI test runs the result in bash).
struct BashCompletionScriptTests {
    static let generated = """
        #!/bin/bash

        _haul() {
            local -a unparsed_words=("${COMP_WORDS[@]:1:${COMP_CWORD}}")
            __haul_offer_flags_options -1

            local -r subcommand="${unparsed_words[0]}"
        }

        _haul_queue_pause() {
            __haul_offer_flags_options -1
        }

        """

    @Test func theDispatchGoesBeforeThePositionalsOfHaulItself() throws {
        let patched = BashCompletionScript.patched(Self.generated, subcommands: ["daemon", "queue", "help"])
        let dispatch = try #require(patched.firstRange(of: #"" daemon queue help " = *" ${unparsed_words[0]} "*"#))
        let positionals = try #require(patched.firstRange(of: "    __haul_offer_flags_options -1\n"))
        #expect(dispatch.upperBound < positionals.lowerBound)
        #expect(patched.hasSuffix("_haul_queue_pause() {\n    __haul_offer_flags_options -1\n}\n"), "only _haul changes")
    }

    @Test func otherTextPassesUnchanged() {
        let help = "USAGE: haul [<options>] [<urls> ...]\n"
        #expect(BashCompletionScript.patched(help, subcommands: ["queue"]) == help)
        let fish = "complete -c haul -f\n"
        #expect(BashCompletionScript.patched(fish, subcommands: ["queue"]) == fish)
    }
}
