import ArgumentParser

/// Many downloads in one run: a list file, or every URL its own download, so many at a time; "Lists" in
/// `--help`.
struct ListOptions: ParsableArguments {
    @Option(name: [.customShort("i", allowingJoined: true), .customLong("input-file")], help: "Download every URL listed in FILE (URL, TAB mirrors, TAB out=NAME); - reads the list from standard input.")
    var inputFile: String?

    @Flag(name: [.customShort("Z"), .customLong("parallel")], help: "Download each URL on the command line as its own file (not as mirrors), --jobs at a time.")
    var parallel = false

    @Option(name: [.customShort("j", allowingJoined: true), .long], help: "Downloads at the same time with --input-file or --parallel.")
    var jobs = 4
}
