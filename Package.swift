// swift-tools-version:6.0
import PackageDescription
#if canImport(Glibc)
import Glibc
#endif

// Link settings for the release `haul` executable that keep its peak RSS low (docs/benchmarks.md, "Memory:
// per download and per connection"). Release builds only: tests and debug builds link as SwiftPM does.
// - lld instead of gold, for the two options below.
// - `-z pack-relative-relocs`: the binary's ~40,000 relative relocations (Swift metadata pointers) as a
//   bitmap of a few KiB instead of a 0.9 MiB table the dynamic loader reads page by page at every start.
//   Needs glibc 2.36 at run time (lld then records the GLIBC_ABI_DT_RELR version), so only where the
//   building machine's glibc has it.
// - `--no-export-dynamic`: nothing loads plug-ins into haul; exporting its ~4,800 Swift symbols only made
//   the loader search them for every symbol libssl, libcrypto and libc look up.
// - A symbol ordering file: the functions a download runs, placed together so that the kernel's fault-around
//   (64 KiB per page fault) maps code that runs rather than its neighbours. Stale names are ignored; see
//   Sources/haul/Link/make-order-file.sh.
// - libstdc++ linked statically (Sources/haul/Link/libstdc++.so is a linker script naming libstdc++.a):
//   the static Swift runtime uses a few of its functions; the shared library relocated and initialized
//   all of it at start (0.9 MiB resident).
let haulLinkDirectory = Context.packageDirectory + "/Sources/haul/Link"
let glibcHasPackedRelocations: Bool = {
    #if canImport(Glibc)
    var buffer = [CChar](repeating: 0, count: 64)
    guard confstr(Int32(_CS_GNU_LIBC_VERSION), &buffer, buffer.count) > 0 else { return false }
    let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    // "glibc 2.36"
    let numbers = text.split(separator: " ").last?.split(separator: ".").compactMap { Int($0) } ?? []
    guard numbers.count >= 2 else { return false }
    return numbers[0] > 2 || (numbers[0] == 2 && numbers[1] >= 36)
    #else
    return false
    #endif
}()
let haulReleaseLinkerFlags: [String] = [
    "-use-ld=lld",
    "-Xlinker", "--no-export-dynamic",
    "-Xlinker", "--symbol-ordering-file=\(haulLinkDirectory)/haul.order",
    "-Xlinker", "--no-warn-symbol-ordering",
    "-L", haulLinkDirectory,
] + (glibcHasPackedRelocations ? ["-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"] : [])

// Compiler flags for the release `haul` executable (Package.swift of a dependency may not carry them, so the
// libraries do without):
// - `-disable-concrete-type-metadata-mangled-name-accessors`: code that needs the metadata of a generic type
//   such as `Option<ByteSize?>` or `OptionGroup<ListOptions>` calls its accessor instead of asking the runtime
//   to demangle the type's name. The runtime resolved each such name once per process, checking the generic
//   requirements on the way, and a requirement check it has not answered before scans every protocol
//   conformance record in the process (~4,700 in the static binary): at every start, while ArgumentParser
//   builds its view of haul's options, ~3 M instructions (callgrind). What remains of such lookups is in
//   ArgumentParser's and the libraries' own code, which flags given here cannot reach.
let haulReleaseSwiftFlags: [String] = ["-Xfrontend", "-disable-concrete-type-metadata-mangled-name-accessors"]

// Layers point one way: HaulHTTP (pure codec) <- HaulIO (syscalls, loop, TLS) <- HaulJournal <- Haul (engine)
// <- HaulSessions (background sessions) <- HaulCommandLine (the CLI's pieces) <- haul (CLI).
let package = Package(
    name: "Haul",
    products: [
        .library(name: "Haul", targets: ["Haul"]),
        .library(name: "HaulHTTP", targets: ["HaulHTTP"]),
        // The resume journal's format (codec, state, CRC-32C), public for the fuzz harnesses (Fuzz/, another
        // package, which `package` access does not reach) and for tools that inspect journals.
        .library(name: "HaulJournal", targets: ["HaulJournal"]),
        .library(name: "HaulSessions", targets: ["HaulSessions"]),
        // The CLI's pure pieces, for the fuzz harnesses (Fuzz/) of the parsers among them (.netrc). The `haul`
        // executable already links this target; the product only makes it importable from outside the package.
        .library(name: "HaulCommandLine", targets: ["HaulCommandLine"]),
        .executable(name: "haul", targets: ["haul"]),
        .executable(name: "haul-parse", targets: ["haul-parse"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // Typed file descriptors, errno and paths for the files Haul writes (the output, the journal, the lock).
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        // The `Logger` embedders pass to HaulClient and HaulSession.
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // `swift package generate-documentation` (Scripts/docs.sh); no target depends on it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // Linux calls Swift's Glibc module does not expose (epoll, eventfd, splice, fallocate, pipe2, ...).
        .target(name: "CHaulSystem"),
        // OpenSSL 3's headers (libssl-dev); the libraries are loaded with dlopen on first use, not linked
        // (Sources/COpenSSL/OpenSSLLoader.c).
        .target(name: "COpenSSL", linkerSettings: [.linkedLibrary("dl")]),

        // SSE2 byte scanners for the head parser, header-only so that they inline into Swift.
        .target(name: "CHaulScan"),
        .target(name: "HaulHTTP", dependencies: ["CHaulScan"]),
        .target(
            name: "HaulIO",
            dependencies: ["HaulHTTP", "CHaulSystem", "COpenSSL", .product(name: "SystemPackage", package: "swift-system")]
        ),
        // The crash-safe resume journal beside a `.part` file: its format, its state and the file that holds it.
        .target(
            name: "HaulJournal",
            dependencies: ["HaulIO", .product(name: "SystemPackage", package: "swift-system")]
        ),
        .target(
            name: "Haul",
            dependencies: [
                "HaulIO", "HaulHTTP", "HaulJournal",
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // Background sessions: a durable queue and event log per session, the daemon that owns them, and
        // the client (Swift API) that talks to it over a Unix socket. No ArgumentParser, no Foundation.
        .target(
            name: "HaulSessions",
            dependencies: [
                "Haul", "HaulIO", "HaulHTTP", "HaulJournal",
                .product(name: "SystemPackage", package: "swift-system"), .product(name: "Logging", package: "swift-log"),
            ]
        ),

        .executableTarget(
            name: "haul",
            dependencies: [
                "Haul", "HaulIO", "HaulHTTP", "HaulCommandLine", "HaulSessions",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            exclude: ["Link"],
            swiftSettings: [.unsafeFlags(haulReleaseSwiftFlags, .when(configuration: .release))],
            linkerSettings: [.unsafeFlags(haulReleaseLinkerFlags, .when(platforms: [.linux], configuration: .release))]
        ),
        // The CLI's pieces (progress lines, JSON events, exit codes, input files, sizes, .netrc), testable
        // without a terminal or a network, and the program-wide stop signals; no ArgumentParser, no Foundation.
        // It uses HaulSessions' JSON writer and failure classes, so that the CLI and the sessions agree.
        .target(
            name: "HaulCommandLine",
            dependencies: [
                "Haul", "HaulIO", "HaulSessions", "CHaulSystem",
                .product(name: "Logging", package: "swift-log"), .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        .executableTarget(name: "haul-parse", dependencies: ["HaulHTTP"]),
        .executableTarget(
            name: "haul-parser-benchmark",
            dependencies: ["HaulHTTP", "CPicoHTTPParser"],
            path: "Benchmarks/ParserBenchmark"
        ),
        // The Swift API at scale: a list's downloads started through HaulClient from a task group (bench.py).
        .executableTarget(name: "haul-api-benchmark", dependencies: ["Haul"], path: "Benchmarks/APIBenchmark"),
        // picohttpparser, vendored as the benchmark's same-run reference; nothing else depends on it.
        .target(name: "CPicoHTTPParser", path: "Benchmarks/PicoHTTPParser", exclude: ["picohttpparser.c"]),

        // Servers the integration tests start themselves: nginx, a scripted misbehaving server, a test CA.
        // It calls OpenSSL beyond what COpenSSL loads (certificates, a TLS server), so it links the libraries.
        .target(
            name: "HaulTestSupport", dependencies: ["COpenSSL", "HaulHTTP", .product(name: "Logging", package: "swift-log")],
            linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]
        ),

        .testTarget(name: "HaulHTTPTests", dependencies: ["HaulHTTP"]),
        .testTarget(name: "HaulTestSupportTests", dependencies: ["HaulTestSupport"]),
        .testTarget(name: "HaulIOTests", dependencies: ["HaulIO", .product(name: "SystemPackage", package: "swift-system")]),
        // The journal's format (codec, state, ranges, CRC-32C) and its file, without the engine.
        .testTarget(name: "HaulJournalTests", dependencies: ["HaulJournal", "HaulIO", "HaulTestSupport"]),
        .testTarget(
            name: "HaulTests",
            dependencies: ["Haul", "HaulIO", "HaulHTTP", "HaulJournal", "HaulTestSupport",
                           .product(name: "SystemPackage", package: "swift-system"), .product(name: "Logging", package: "swift-log")]
        ),
        // Runs the built `haul` binary as a user would; a few tests parse its command line in-process
        // (`@testable import haul`) to compare what `haul` and `haul queue add` make of the same flags.
        .testTarget(name: "HaulCLITests", dependencies: ["HaulTestSupport", "haul", "HaulSessions"]),
        // The strict JSON parser that checks the CLI's JSON lines is HaulSessions' (one parser for both).
        .testTarget(
            name: "HaulCommandLineTests",
            dependencies: ["HaulCommandLine", "HaulSessions", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(
            name: "HaulSessionsTests",
            dependencies: [
                "HaulSessions", "HaulIO", "HaulTestSupport",
                .product(name: "SystemPackage", package: "swift-system"), .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
