// swift-tools-version:6.0
import PackageDescription

// Layers point one way: HaulHTTP (pure codec) <- HaulIO (syscalls, loop, TLS) <- Haul (engine) <- haul (CLI).
let package = Package(
    name: "Haul",
    products: [
        .library(name: "Haul", targets: ["Haul"]),
        .library(name: "HaulHTTP", targets: ["HaulHTTP"]),
        .library(name: "HaulSessions", targets: ["HaulSessions"]),
        .executable(name: "haul", targets: ["haul"]),
        .executable(name: "haul-parse", targets: ["haul-parse"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
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
        .target(name: "HaulIO", dependencies: ["HaulHTTP", "CHaulSystem", "COpenSSL"]),
        .target(name: "Haul", dependencies: ["HaulIO", "HaulHTTP"]),

        // Background sessions: a durable queue and event log per session, the daemon that owns them, and
        // the client (Swift API) that talks to it over a Unix socket. No ArgumentParser, no Foundation.
        .target(name: "HaulSessions", dependencies: ["Haul", "HaulCommandLine"]),

        .executableTarget(
            name: "haul",
            dependencies: ["Haul", "HaulCommandLine", "HaulSessions", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        // The CLI's pure pieces (progress lines, JSON events, exit codes, input files, sizes), testable
        // without a terminal or a network; no ArgumentParser and no Foundation.
        .target(name: "HaulCommandLine", dependencies: ["Haul"]),
        .executableTarget(name: "haul-parse", dependencies: ["HaulHTTP"]),
        .executableTarget(
            name: "haul-parser-benchmark",
            dependencies: ["HaulHTTP"],
            path: "Benchmarks/ParserBenchmark"
        ),

        // Servers the integration tests start themselves: nginx, a scripted misbehaving server, a test CA.
        // It calls OpenSSL beyond what COpenSSL loads (certificates, a TLS server), so it links the libraries.
        .target(
            name: "HaulTestSupport", dependencies: ["COpenSSL", "HaulHTTP"],
            linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]
        ),

        .testTarget(name: "HaulHTTPTests", dependencies: ["HaulHTTP"]),
        .testTarget(name: "HaulTestSupportTests", dependencies: ["HaulTestSupport"]),
        .testTarget(name: "HaulIOTests", dependencies: ["HaulIO"]),
        .testTarget(name: "HaulTests", dependencies: ["Haul", "HaulTestSupport"]),
        // Runs the built `haul` binary as a user would.
        .testTarget(name: "HaulCLITests", dependencies: ["HaulTestSupport"]),
        .testTarget(name: "HaulCommandLineTests", dependencies: ["HaulCommandLine"]),
        .testTarget(name: "HaulSessionsTests", dependencies: ["HaulSessions", "HaulTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
