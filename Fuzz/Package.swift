// swift-tools-version:6.0
import PackageDescription

// libFuzzer harnesses for everything in Haul that parses untrusted bytes. Build and run with
// `Scripts/fuzz.sh` (it passes -sanitize=fuzzer,address); each harness is one executable.
let harnesses = ["FuzzResponseParser", "FuzzChunkedDecoder", "FuzzURL", "FuzzContentDisposition", "FuzzFieldValues", "FuzzJournal",
                 "FuzzSessions", "FuzzProxySettings"]
// Harnesses for formats that live in the engine (the resume journal) link the whole `Haul` library; the
// session log and protocol live in `HaulSessions`.
let engineHarnesses: Set<String> = ["FuzzJournal"]
let sessionHarnesses: Set<String> = ["FuzzSessions"]

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
                .product(name: sessionHarnesses.contains(name) ? "HaulSessions" : engineHarnesses.contains(name) ? "Haul" : "HaulHTTP",
                         package: "Haul"),
            ]
        )
    },
    swiftLanguageModes: [.v6]
)
