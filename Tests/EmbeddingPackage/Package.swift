// swift-tools-version:6.0
import PackageDescription

// An app that embeds Haul, the way its users write one: a package of its own that depends on Haul by path,
// in Swift 6 mode, and that also imports a module declaring the names SwiftNIO, NIO SSL, AsyncHTTPClient and
// swift-http-types declare (FakeNIO). EmbeddingApp uses those names unqualified next to Haul's API, so it
// compiles only while `import Haul` exports none of them. QueuedDownloads uses a background session
// (HaulSessions) and matches a queued task's typed failure. Scripts/test.sh builds it
// (`swift build --target EmbeddingApp`, scratch path .build/embedding of the root package).
let package = Package(
    name: "EmbeddingPackage",
    dependencies: [.package(name: "Haul", path: "../..")],
    targets: [
        .target(name: "FakeNIO"),
        .target(
            name: "EmbeddingApp",
            dependencies: ["FakeNIO", .product(name: "Haul", package: "Haul"), .product(name: "HaulSessions", package: "Haul")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
