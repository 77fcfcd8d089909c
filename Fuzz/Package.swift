// swift-tools-version:6.0
import PackageDescription

// libFuzzer harnesses for everything in Haul that parses untrusted bytes. Build and run with
// `Scripts/fuzz.sh` (it passes -sanitize=fuzzer,address); each harness is one executable.
let harnesses = ["FuzzResponseParser", "FuzzChunkedDecoder", "FuzzURL", "FuzzContentDisposition", "FuzzFieldValues", "FuzzJournal",
                 "FuzzSessions", "FuzzProxySettings", "FuzzProxyReplies", "FuzzNetrc", "FuzzInputFile", "FuzzCodable",
                 "FuzzMetalink"]
// The resume journal's format lives in `HaulJournal`; proxy replies in HaulIO (the harness links `Haul`
// and imports HaulIO itself); requests and results decoded from JSON and
// Metalink documents in `Haul`; the session log and protocol
// in `HaulSessions`, the .netrc and `-i` list parsers in `HaulCommandLine`.
let journalHarnesses: Set<String> = ["FuzzJournal"]
let engineHarnesses: Set<String> = ["FuzzProxyReplies", "FuzzCodable", "FuzzMetalink"]
let sessionHarnesses: Set<String> = ["FuzzSessions"]
let commandLineHarnesses: Set<String> = ["FuzzNetrc", "FuzzInputFile"]

func library(for harness: String) -> String {
    if sessionHarnesses.contains(harness) { return "HaulSessions" }
    if commandLineHarnesses.contains(harness) { return "HaulCommandLine" }
    if journalHarnesses.contains(harness) { return "HaulJournal" }
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
