import ArgumentParser

/// What `haul` reports on stderr while it downloads; "Progress" in `--help`.
struct ProgressOptions: ParsableArguments {
    @Option(name: .long, help: "Progress on stderr: bar (plain lines when not a terminal), json, or none.")
    var progress: ProgressStyleArgument?

    @Flag(name: [.short, .long], help: "Print nothing but errors.")
    var quiet = false

    @Flag(name: [.short, .long], help: "Log every request (with its Range), response, redirect, retry and resume decision to stderr.")
    var verbose = false
}
