import FuzzDriver
import HaulCommandLine

/// A .netrc file is whatever the user (or another tool) left there, and `--netrc-file` takes any path. The
/// parser must never crash; an error must name a line of the file; what parses must read back as itself when
/// written out again (every token quoted); CRLF line endings must mean the same as LF; and looking up
/// credentials for any host the file names must not crash and must give a login and password from the file.
func fuzzNetrc(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let crlfText = withCRLF(text)
    let parsed: Netrc
    do {
        parsed = try Netrc(parsing: text)
    } catch {
        let lines = text.unicodeScalars.count { $0 == "\n" } + 1
        precondition(error.line >= 1 && error.line <= lines, "\(error) in a file of \(lines) lines")
        checkSameError(text, crlfText)
        return 0
    }
    let written = write(parsed)
    guard let again = try? Netrc(parsing: written) else { preconditionFailure("written entries do not parse:\n\(written)") }
    precondition(again == parsed, "entries do not read back as themselves:\n\(written)")
    let crlf = try? Netrc(parsing: crlfText)
    precondition(crlf == parsed, "CRLF line endings changed the entries")

    for entry in parsed.entries {
        for user in [nil, entry.login] {
            if let found = parsed.credentials(forHost: entry.machine ?? "elsewhere.invalid", user: user) {
                precondition(parsed.entries.contains { $0.password == found.password }, "a password not in the file")
                precondition(parsed.entries.contains { $0.login == found.login } || found.login == user, "a login not in the file")
            }
        }
    }
    return 0
}

/// Both texts fail with the same error.
func checkSameError(_ text: String, _ crlfText: String) {
    var first: NetrcError?
    do { _ = try Netrc(parsing: text) } catch { first = error }
    var second: NetrcError?
    do { _ = try Netrc(parsing: crlfText) } catch { second = error }
    precondition(first == second, "LF: \(String(describing: first)); CRLF: \(String(describing: second))")
}

/// Every LF preceded by a CR. By scalars: a String compares "\r\n" as one Character.
func withCRLF(_ text: String) -> String {
    var scalars = String.UnicodeScalarView()
    for scalar in text.unicodeScalars {
        if scalar == "\n" { scalars.append("\r") }
        scalars.append(scalar)
    }
    return String(scalars)
}

/// The entries as netrc text, one entry a line, every value quoted.
func write(_ netrc: Netrc) -> String {
    var text = ""
    for entry in netrc.entries {
        text += entry.machine.map { "machine " + quoted($0) } ?? "default"
        if let login = entry.login { text += " login " + quoted(login) }
        if let password = entry.password { text += " password " + quoted(password) }
        text += "\n"
    }
    return text
}

func quoted(_ value: String) -> String {
    var scalars = String.UnicodeScalarView()
    scalars.append("\"")
    for scalar in value.unicodeScalars {
        switch scalar {
        case "\"": scalars.append(contentsOf: "\\\"".unicodeScalars)
        case "\\": scalars.append(contentsOf: "\\\\".unicodeScalars)
        case "\n": scalars.append(contentsOf: "\\n".unicodeScalars)
        case "\r": scalars.append(contentsOf: "\\r".unicodeScalars)
        case "\t": scalars.append(contentsOf: "\\t".unicodeScalars)
        default: scalars.append(scalar)
        }
    }
    scalars.append("\"")
    return String(scalars)
}

@_cdecl("FuzzNetrc_main")
func main(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    haul_fuzz_run(argc, argv) { fuzzNetrc($0, $1) }
}
