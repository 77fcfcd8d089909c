import FuzzDriver
import Haul
import HaulCommandLine

/// An `-i` list is whatever the user (or a script) wrote, read as a stream by ``InputFileReader``. It must
/// never crash; whatever the read sizes, the reader must give exactly the entries and the error that
/// ``InputFile/parse(_:)`` gives on the whole text; an error names a line of the file; entries come in line
/// order, each on a line of the file, with every name used at most once. The same bytes also go to `-z`'s
/// ``TimeCondition/parse(_:outputPaths:modificationTime:)``.
func fuzzInputFile(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // The first byte picks the reader's buffer size and how much each read returns, so that lines are cut
    // everywhere: at the buffer's end, inside a UTF-8 sequence, between "\r" and "\n".
    let shape = bytes.first ?? 0
    let input = Array(bytes.dropFirst())
    let text = String(decoding: input, as: UTF8.self)
    let lines = input.count { $0 == UInt8(ascii: "\n") } + 1

    let whole: Result<[InputEntry], InputFileError> = Result { () throws(InputFileError) in try InputFile.parse(text) }
    let streamed = readAll(input, bufferSize: Int(shape & 0x1F) + 1, readLimit: Int(shape >> 5) * 3 + 1)
    precondition(streamed == whole, "the reader gave \(streamed), parse gave \(whole)")

    switch whole {
    case .failure(let error):
        precondition(error.line >= 1 && error.line <= lines, "\(error) in a file of \(lines) lines")
    case .success(let entries):
        var previous = 0
        var names: Set<String> = []
        for entry in entries {
            precondition(entry.line > previous && entry.line <= lines, "entry on line \(entry.line) after \(previous) of \(lines)")
            previous = entry.line
            // Compared as bytes: a combining mark after "//" joins the "/" into one Character.
            let head = entry.url.utf8.prefix(8).map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
            precondition(head.starts(with: "http://".utf8) || head.starts(with: "https://".utf8), "not an http(s) URL: \(entry.url)")
            if let name = entry.outputName { precondition(names.insert(name).inserted, "out=\(name) used twice") }
        }
        // A long list is read again from where its first entries end (`-i` keeps only those in memory): a
        // reader resumed at that offset and line gives exactly the rest, with the same line numbers.
        if entries.count >= 2 {
            let taken = Int(shape) % (entries.count - 1) + 1
            let rest = readRest(input, after: taken, bufferSize: Int(shape & 0x1F) + 1)
            precondition(rest == .success(Array(entries.dropFirst(taken))),
                         "resumed after \(taken) entries: \(rest), parse gave \(Array(entries.dropFirst(taken)))")
        }
    }

    // `-z`'s argument is the user's too: never a crash, and a date read from it reads back as itself.
    do {
        if case .modifiedSince(let date) = try TimeCondition.parse(text, outputPaths: ["out"], modificationTime: { _ in nil }) {
            precondition(HTTPDate(date.imfFixdate) == date, "-z \(date.imfFixdate) does not read back")
        }
    } catch {
        precondition(!error.description.isEmpty, "a -z refusal without a message")
    }
    return 0
}

/// Every entry from an ``InputFileReader`` whose reads return at most `readLimit` bytes.
func readAll(_ input: [UInt8], bufferSize: Int, readLimit: Int) -> Result<[InputEntry], InputFileError> {
    var offset = 0
    let reader = InputFileReader(bufferSize: bufferSize) { buffer in
        let count = min(buffer.count, readLimit, input.count - offset)
        for index in 0..<count { buffer[index] = input[offset + index] }
        offset += count
        return count
    }
    var entries: [InputEntry] = []
    do {
        while let entry = try reader.next() { entries.append(entry) }
    } catch let error as InputFileError {
        return .failure(error)
    } catch {
        preconditionFailure("the reader threw \(error), not an InputFileError")
    }
    return .success(entries)
}

/// The entries after the first `taken`, read by a reader resumed where a first reader left them
/// (``InputFileReader/lastLineOffset``, ``InputFileReader/lineNumber`` - 1).
func readRest(_ input: [UInt8], after taken: Int, bufferSize: Int) -> Result<[InputEntry], InputFileError> {
    func reader(from start: Int, afterLine line: Int) -> InputFileReader {
        var offset = start
        return InputFileReader(bufferSize: bufferSize, resumingAt: start, afterLine: line) { buffer in
            let count = min(buffer.count, input.count - offset)
            for index in 0..<count { buffer[index] = input[offset + index] }
            offset += count
            return count
        }
    }
    do {
        let first = reader(from: 0, afterLine: 0)
        for _ in 0..<taken {
            guard try first.next() != nil else { preconditionFailure("fewer than \(taken) entries on a second reading") }
        }
        let resumed = reader(from: first.lastLineOffset, afterLine: first.lineNumber - 1)
        var entries: [InputEntry] = []
        while let entry = try resumed.next() { entries.append(entry) }
        return .success(entries)
    } catch let error as InputFileError {
        return .failure(error)
    } catch {
        preconditionFailure("the reader threw \(error), not an InputFileError")
    }
}

@_cdecl("FuzzInputFile_main")
func main(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    haul_fuzz_run(argc, argv) { fuzzInputFile($0, $1) }
}
