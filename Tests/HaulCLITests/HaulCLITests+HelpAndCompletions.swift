import Foundation
import Glibc
import Testing
import HaulTestSupport

/// `--help`, the shell completions and the man page: what the argument parser makes of the options.
extension HaulCLITests {
    @Test func helpListsTheOptionsAndExitCodes() throws {
        let run = try haul(["--help"])
        #expect(run.exitStatus == 0)
        for text in ["--input-file", "--limit-rate", "--progress", "130", "interrupted", "checksum"] {
            #expect(run.outputText.contains(text), "help mentions \(text)")
        }
    }

    /// The exit-code table in --help keeps its three columns at 80 columns: long meanings continue on
    /// lines indented to the meaning column instead of wrapping to the margin.
    @Test func helpExitCodeTableKeepsItsColumnsAtEightyColumns() throws {
        let run = try ChildProcess.run("/usr/bin/env", ["COLUMNS=80", Self.binary, "--help"])
        #expect(run.exitStatus == 0)
        let lines = run.outputText.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.allSatisfy { $0.count < 80 }, "\(lines.filter { $0.count >= 80 })")
        let start = try #require(lines.firstIndex(of: "Exit codes:"))
        let table = lines[(start + 1)...].prefix { !$0.isEmpty }
        let rows = table.filter { $0.wholeMatch(of: /\s{2,4}\d{1,3}  [a-z-]+ +\S.*/) != nil }
        #expect(rows.map { $0.split(separator: " ")[0] } == ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "63", "130"], "\(table)")
        let meaningColumn = try #require(rows.first.map { row in row.distance(from: row.startIndex, to: row.firstRange(of: "every")!.lowerBound) })
        for line in table where !rows.contains(line) {
            #expect(line.hasPrefix(String(repeating: " ", count: meaningColumn)) && line.dropFirst(meaningColumn).first != " ",
                    "a continuation line starts at the meaning column: \(line.debugDescription)")
        }
        for row in rows {
            #expect(row.dropFirst(meaningColumn - 2).hasPrefix("  ") && row.dropFirst(meaningColumn).first != " ", "\(row)")
        }
    }

    /// bash completes the subcommands' words after `haul queue` (haul's URLs, any number of positionals, used
    /// to swallow `queue`, so `haul queue <Tab>` offered the top-level words and `haul queue a<Tab>` nothing).
    @Test func bashCompletesTheQueueSubcommands() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
        let script = """
            source "$0"
            COMP_WORDS=("${@}"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
            _haul haul "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
            echo "${COMPREPLY[*]}"
            """
        func complete(_ words: String...) throws -> String {
            let run = try ChildProcess.run("/bin/bash", ["-c", script, root + "/docs/completions/haul.bash"] + words, timeout: 30)
            #expect(run.exitStatus == 0, "\(run.errorText)")
            return run.outputText.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(try complete("haul", "queue", "") == "-h --help add list pause resume cancel remove wait events stop")
        #expect(try complete("haul", "queue", "a") == "add")
        #expect(try complete("haul", "queue", "add", "--ret") == "--retries")
        #expect(try complete("haul", "qu") == "queue", "the top level still completes")
        #expect(try complete("haul", "--on-change", "re") == "restart")
    }

    /// The committed completions and man page are what the argument parser makes of today's options
    /// (run Scripts/generate-docs.sh after changing one).
    @Test func committedCompletionsAndManPageMatchTheOptions() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
        for (shell, file) in [("bash", "haul.bash"), ("zsh", "_haul"), ("fish", "haul.fish")] {
            let generated = try haul(["--generate-completion-script", shell])
            #expect(generated.exitStatus == 0)
            let committed = try String(contentsOfFile: root + "/docs/completions/" + file, encoding: .utf8)
            #expect(committed == generated.outputText, "docs/completions/\(file) is stale: run Scripts/generate-docs.sh")
        }
        let manual = try String(contentsOfFile: root + "/docs/haul.1", encoding: .utf8)
        let help = try haul(["--help"]).outputText
        // The options --help documents: each line that starts with one (`  -c, --connections <n>`, `  --restart`).
        let options = help.split(separator: "\n").compactMap { line in
            line.firstMatch(of: /^  (?:-[A-Za-z], )?(--[a-z][a-z-]+)/).map { String($0.output.1) }
        }
        #expect(options.count > 25 && options.contains("--skip-existing"), "\(options)")
        // Listed in DESCRIPTION as `.It Fl -restart` or, with a short name, `.It Fl o , -output` (the SYNOPSIS is
        // the usage, not every option).
        for option in options {
            let name = option.dropFirst(2)
            #expect(manual.contains(".It Fl -" + name) || manual.contains(" , -" + name),
                    "docs/haul.1 lacks \(option): run Scripts/generate-docs.sh")
        }
    }
}
