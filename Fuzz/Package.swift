// swift-tools-version:6.0
import PackageDescription

// libFuzzer harnesses for everything in Haul that parses untrusted bytes. Build and run with
// `Scripts/fuzz.sh` (it passes -sanitize=fuzzer,address); each harness is one executable.
let harnesses = ["FuzzResponseParser", "FuzzChunkedDecoder", "FuzzURL", "FuzzContentDisposition", "FuzzFieldValues", "FuzzJournal",
                 "FuzzSessions", "FuzzProxySettings", "FuzzProxyReplies", "FuzzNetrc", "FuzzInputFile"]
// Harnesses for formats that live in the engine (the resume journal) or in HaulIO (proxy replies: HaulIO is
// no product: the harness links `Haul`, which exports only its own API, and imports HaulIO itself) link
// the whole `Haul` library; the session log and protocol live in `HaulSessions`,
// the .netrc and `-i` list parsers in `HaulCommandLine`.
let engineHarnesses: Set<String> = ["FuzzJournal", "FuzzProxyReplies"]
let sessionHarnesses: Set<String> = ["FuzzSessions"]
let commandLineHarnesses: Set<String> = ["FuzzNetrc", "FuzzInputFile"]

func library(for harness: String) -> String {
    if sessionHarnesses.contains(harness) { return "HaulSessions" }
    if commandLineHarnesses.contains(harness) { return "HaulCommandLine" }
    if engineHarnesses.contains(harness) { return "Haul" }
    return "HaulHTTP"
}

let package = Package(
    name: "HaulFuzz",
    dependencies: [.package(name: "Haul", path: "..")],
    targets: [
        // Declares libFuzzer's driver entry point for Swift.
        .target(name: "FuzzDriver"),
    ] + harnesses.map { name in
        .executableTarget(
            name: name,
            dependencies: [
                "FuzzDriver",
                .product(name: library(for: name), package: "Haul"),
            ]
        )
    },
    swiftLanguageModes: [.v6]
)
