import HaulSessions

/// The `haul` command's version: `--version`, the default `User-Agent` and the man page all take it from
/// here, and this from HaulSessions (`SessionProtocol.haulVersion`), whose daemon states it in its `hello`.
public enum HaulVersion {
    /// The release number, `MAJOR.MINOR.PATCH`.
    public static let number = SessionProtocol.haulVersion

    /// The default `User-Agent` the CLI sends: `haul/0.2.0`.
    public static var userAgent: String { "haul/" + number }

    /// The compiler that built this binary, as far as `#if compiler` can tell (`6.3`).
    public static var compiler: String {
        #if compiler(>=7.0)
        return ">= 7.0"
        #elseif compiler(>=6.4)
        return "6.4"
        #elseif compiler(>=6.3)
        return "6.3"
        #elseif compiler(>=6.2)
        return "6.2"
        #elseif compiler(>=6.1)
        return "6.1"
        #else
        return "6.0"
        #endif
    }

    /// The machine the binary is for.
    public static var architecture: String {
        #if arch(x86_64)
        return "x86_64"
        #elseif arch(arm64)
        return "aarch64"
        #else
        return "unknown architecture"
        #endif
    }

    /// Whether this is a debug build (SwiftPM defines `DEBUG` there).
    public static var configuration: String {
        #if DEBUG
        return "debug"
        #else
        return "release"
        #endif
    }

    /// What `haul --version` prints: `haul 0.2.0` and a line about the build.
    public static var versionText: String {
        "haul \(number)\nbuilt with Swift \(compiler) for Linux \(architecture) (\(configuration) build)"
    }
}
