import Testing
import Haul
import HaulCommandLine

/// What haul answers to the spellings of curl, wget and aria2 (``CommandLineHabits``).
@Suite struct CommandLineHabitsTests {
    @Test func wgetsDashCWithAURLSaysHaulResumesByDefault() {
        let answer = "haul resumes by default; -c is the number of connections (wget's -c is not needed)"
        #expect(CommandLineHabits.answer(for: ["-c", "https://example.org/a.iso"]) == answer)
        #expect(CommandLineHabits.answer(for: ["https://example.org/a.iso", "-c"]) == answer)
        #expect(CommandLineHabits.answer(for: ["--connections=x", "u"]) == nil, "no wget habit: the parser says it")
        #expect(CommandLineHabits.answer(for: ["-c", "16", "u"]) == nil)
        // A count too large for an Int is no wget habit (it used to be answered as one); the parser says it is invalid.
        #expect(CommandLineHabits.answer(for: ["-c", "99999999999999999999", "u"]) == nil)
        #expect(CommandLineHabits.answer(for: ["-c16", "u"]) == nil)
        #expect(CommandLineHabits.answer(for: ["--", "-c", "u"]) == nil, "after -- everything is a URL")
    }

    @Test func aria2sConnectionCountsAreNeverAProxyOrAURL() {
        #expect(CommandLineHabits.answer(for: ["-x", "4", "u"]) == "aria2's -x 4 is haul's -c 4 (connections per download)")
        #expect(CommandLineHabits.answer(for: ["-x16", "u"]) == "aria2's -x 16 is haul's -c 16 (connections per download)")
        #expect(CommandLineHabits.answer(for: ["-s", "8", "u"]) == "aria2's -s 8 is haul's -c 8 (connections per download)")
        #expect(CommandLineHabits.answer(for: ["--max-connection-per-server=5", "u"]) == "aria2's --max-connection-per-server is haul's -c 5 (connections per download)")
        #expect(CommandLineHabits.answer(for: ["-x", "http://proxy:3128", "u"]) == nil)
        #expect(CommandLineHabits.answer(for: ["-xsocks5h://p:1080", "u"]) == nil)
        #expect(CommandLineHabits.answer(for: ["-s", "u"]) == nil, "curl's -s is -q")
        #expect(CommandLineHabits.answer(for: ["-sSL", "u"]) == nil)
    }

    @Test func curlsNoOpsPassAndTheOthersAreAnswered() {
        #expect(CommandLineHabits.answer(for: ["-C", "-", "u"]) == nil)
        #expect(CommandLineHabits.answer(for: ["--continue-at", "-", "u"]) == nil)
        #expect(CommandLineHabits.answer(for: ["-C", "100", "u"])?.contains("takes only '-'") == true)
        #expect(CommandLineHabits.answer(for: ["--compressed", "u"]) == nil, "accepted: the file arrives as stored anyway")
        #expect(CommandLineHabits.answer(for: ["-L", "-O", "-f", "u"]) == nil)
        #expect(CommandLineHabits.answer(for: ["-nc", "u"]) == "wget's -nc is haul's --skip-existing")
        #expect(CommandLineHabits.answer(for: ["-O", "http://h/a"]) == nil, "curl's -O URL")
        #expect(CommandLineHabits.answer(for: ["-O", "a.iso", "http://h/a"])?.hasPrefix("wget's -O FILE is haul's -o FILE") == true)
    }

    @Test func otherToolsOptionsNameHaulsOwnBeforeTheNearestSpelling() {
        #expect(CommandLineHabits.alias(forUnknownOption: "--retry") == "--retries")
        #expect(CommandLineHabits.alias(forUnknownOption: "--retry=3") == "--retries")
        #expect(CommandLineHabits.alias(forUnknownOption: "-t") == "--retries")
        #expect(CommandLineHabits.alias(forUnknownOption: "--no-such") == nil)
        #expect(CommandLineHabits.rewordingUnknownOption("Error: Unknown option '--retry'. Did you mean '--netrc'?")
            == "unknown option '--retry'; haul's is --retries")
        let other = "Error: Unknown option '--nope'. Did you mean '--dir'?"
        #expect(CommandLineHabits.rewordingUnknownOption(other) == other)
    }

    @Test func aria2sChecksumSpellingAndSHA512() throws {
        let hex256 = String(repeating: "ab", count: 32), hex512 = String(repeating: "cd", count: 64)
        #expect(try Checksum("sha-256=" + hex256) == Checksum(algorithm: .sha256, hex: hex256))
        #expect(try Checksum("SHA-512=" + hex512) == Checksum(algorithm: .sha512, hex: hex512))
        #expect(try Checksum("sha512=" + hex512).description == "sha512=" + hex512)
        #expect(try Checksum("sha-1=" + String(repeating: "0", count: 40)).algorithm == .sha1)
        #expect(throws: ChecksumFormatError.self) { try Checksum("md-5=" + String(repeating: "0", count: 32)) }
        #expect(throws: ChecksumFormatError.self) { try Checksum("sha-512=" + hex256) }
    }

    @Test func dashUWithoutAPasswordIsToBeAskedNotSentEmpty() {
        #expect(UserOption.read("alice") == .needsPassword(user: "alice"))
        #expect(UserOption.read("alice:") == .complete(user: "alice", password: ""))
        #expect(UserOption.read("alice:a:b") == .complete(user: "alice", password: "a:b"))
        #expect(UserOption.prompt(user: "alice") == "Enter host password for user 'alice':")
        #expect(UserOption.missingPassword(user: "alice").message.contains("use -u alice:PASSWORD"))
    }

    @Test func aSpaceInAURLIsRefusedWithItsLineAndColumn() throws {
        #expect(URLText.interiorSpaceColumn(in: " http://h/a b ") == 12)
        #expect(URLText.interiorSpaceColumn(in: "  http://h/a\t") == nil)
        #expect(URLText.interiorSpaceColumn(in: "http://h/a%20b") == nil)
        #expect(throws: InputFileError(line: 2, reason: .spaceInURL(column: 15, beforeOption: true))) {
            try InputFile.parse("http://h/first\nhttp://h/a.iso out=b.iso\n")
        }
        #expect(throws: InputFileError(line: 1, reason: .spaceInURL(column: 22, beforeOption: false))) {
            try InputFile.parse("http://h/a\thttp://m/a b\n")
        }
        let error = InputFileError(line: 2, reason: .spaceInURL(column: 15, beforeOption: true))
        #expect(error.description == "input file line 2: a space in the URL at column 15; as in aria2, out=NAME goes after a TAB or on the next line, indented")
        // aria2's own layout still reads: a TAB, or an indented option line.
        #expect(try InputFile.parse("http://h/a.iso\tout=b.iso\nhttp://h/c\n  out=d\n").map(\.outputName) == ["b.iso", "d"])
    }
}
