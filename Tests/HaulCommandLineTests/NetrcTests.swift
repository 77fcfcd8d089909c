import Testing
import HaulCommandLine

@Suite struct NetrcTests {
    let text = """
        machine files.example login alice password s3cret
        machine other.example
            login bob
            password "with space \\"quoted\\""
        macdef init
        cd /pub
        get x

        machine files.example login carol password c4rol
        default login anonymous password guest@
        """

    @Test func entriesAcrossLinesQuotesAndMacros() throws {
        let netrc = try Netrc(parsing: text)
        #expect(netrc.entries.count == 4)
        #expect(netrc.credentials(forHost: "FILES.example")! == ("alice", "s3cret"))
        #expect(netrc.credentials(forHost: "other.example")! == ("bob", "with space \"quoted\""))
        #expect(netrc.credentials(forHost: "files.example", user: "carol")! == ("carol", "c4rol"))
        #expect(netrc.credentials(forHost: "elsewhere.example")! == ("anonymous", "guest@"))
        #expect(netrc.credentials(forHost: "elsewhere.example", user: "dave") == nil)
    }

    @Test(arguments: [("machine", 1, "without a host name"), ("login x", 1, "before any"),
                      ("machine a\nlogin", 2, "without a value"), ("machine a password \"open", 1, "unterminated"),
                      ("machine a password \"open\\\nx\"", 1, "unterminated"),
                      ("machine a password \"open\\\r\nx\"", 1, "unterminated"),
                      ("machine a\n\nfrobnicate 1", 3, "unexpected \"frobnicate\"")])
    func errorsNameTheLine(text: String, line: Int, message: String) {
        #expect { try Netrc(parsing: text) } throws: { error in
            guard let error = error as? NetrcError else { return false }
            return error.line == line && error.description.contains(message)
        }
    }

    @Test func anEntryWithoutAPasswordGivesNothing() throws {
        #expect(try Netrc(parsing: "machine a login x").credentials(forHost: "a") == nil)
        #expect(try Netrc(parsing: "").credentials(forHost: "a") == nil)
    }
}
