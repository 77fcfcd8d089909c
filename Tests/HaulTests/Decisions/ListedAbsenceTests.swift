import Testing
import HaulHTTP
@testable import Haul

/// When a download takes its caller's listing of the directory (``DownloadRequest/listedAbsentPath``) instead
/// of looking for `NAME` and `NAME.part` itself.
@Suite struct ListedAbsenceTests {
    /// A list's download into `d`, as the CLI makes it, told that `d/a.bin` was not there.
    func listed(_ destination: DownloadRequest.Destination = .directory("d"), path: String? = "d/a.bin") -> DownloadRequest {
        var request = DownloadRequest(url: "http://h.example/a.bin", destination: destination, createsDirectories: true)
        request.listedAbsentPath = path
        return request
    }

    @Test func theListedPathItselfSkipsTheLookups() {
        #expect(ListedAbsence.skipsLookups(listed(), destination: "d/a.bin"))
        #expect(ListedAbsence.skipsLookups(listed(.file("d/a.bin")), destination: "d/a.bin"), "out=NAME: a file destination")
    }

    /// A directory download the server names otherwise (`Content-Disposition`, curl's `-J`; a redirect to
    /// another name) looks for that name as before: the listing said nothing about it.
    @Test func anotherPathLooksAsBefore() {
        #expect(!ListedAbsence.skipsLookups(listed(), destination: "d/report.pdf"))
        #expect(!ListedAbsence.skipsLookups(listed(), destination: "d/a.bin.part"))
        #expect(!ListedAbsence.skipsLookups(listed(), destination: "d/./a.bin"), "the same file by another spelling: compared as text")
        #expect(!ListedAbsence.skipsLookups(listed(), destination: nil), "not named yet")
    }

    /// No listing — none made (one URL, no `-i`), or the directory held too many entries to list — looks.
    @Test func noListingLooksAsBefore() {
        #expect(!ListedAbsence.skipsLookups(listed(path: nil), destination: "d/a.bin"))
    }

    /// What is there may be replaced (`--allow-overwrite`) or asked about (`-N`, `-z`): the named path's
    /// rules, which need the lookups.
    @Test func replacingOrAskingLooksAsBefore() {
        var overwrite = listed()
        overwrite.replacesExisting = true
        var onlyIfChanged = listed(.file("d/a.bin"))
        onlyIfChanged.onlyIfChanged = true
        var modifiedSince = listed()
        modifiedSince.modifiedSince = HTTPDate(secondsSinceEpoch: 1_630_497_600)
        for request in [overwrite, onlyIfChanged, modifiedSince] {
            #expect(!ListedAbsence.skipsLookups(request, destination: "d/a.bin"))
        }
    }

    /// Continuing is the default and `--restart` discards a partial download: neither has anything to act
    /// on when no `.part` was listed, so both skip. (A resume after a pause in this process is prepared
    /// without the listing: ``DownloadTask``, tested in ``ListedAbsenceDownloadTests``.)
    @Test func continueAndRestartModesSkipAlike() {
        var restart = listed()
        restart.discardsPartialDownload = true
        #expect(ListedAbsence.skipsLookups(restart, destination: "d/a.bin"))
        var changeRestarts = listed()
        changeRestarts.ifChangedOnServer = .restart
        #expect(ListedAbsence.skipsLookups(changeRestarts, destination: "d/a.bin"))
    }

    /// Memory and streams have no file to look for, whatever the request says.
    @Test func memoryAndStreamsNeverSkip() {
        #expect(!ListedAbsence.skipsLookups(listed(.memory(limit: 1 << 20)), destination: "d/a.bin"))
        #expect(!ListedAbsence.skipsLookups(listed(.stream(.standardOutput)), destination: "d/a.bin"))
    }

    /// The listing is a hint, not part of the request's value.
    @Test func theListingIsNotPartOfTheValue() {
        #expect(listed() == listed(path: nil))
    }
}
