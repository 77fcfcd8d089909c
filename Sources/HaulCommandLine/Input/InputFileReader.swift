/// Reads an input file's entries one at a time from a byte source, in a fixed buffer: a list of a million
/// URLs costs no more memory than one of ten (beyond the `out=NAME` names it uses, see ``InputFile/Parser``).
///
/// The entries and errors are those of ``InputFile/parse(_:)`` on the whole text, however the source splits
/// its bytes. Not thread-safe: one reader per consumer.
public final class InputFileReader {
    /// Fills the buffer from the start and returns how many bytes it read (0 at the end of the input).
    public typealias Read = (UnsafeMutableRawBufferPointer) throws -> Int

    private let read: Read
    private var buffer: [UInt8]
    private var start = 0
    private var end = 0
    private var atEnd = false
    private var lastLineGiven = false
    private var firstLine = true
    /// The start of a line whose end is not read yet.
    private var partial: [UInt8] = []
    private var parser: InputFile.Parser
    /// The byte offset in the input of the first byte not yet given as part of a line.
    private var nextLineOffset: Int

    /// A reader of the input from its start; or, with `offset` and `line`, of the rest of an input from the
    /// start of line `line + 1`, which `read` gives from byte `offset` on (``lastLineOffset`` of an earlier
    /// reading): line numbers then count on from `line`, and no byte order mark is looked for.
    public init(bufferSize: Int = 64 * 1024, resumingAt offset: Int = 0, afterLine line: Int = 0, read: @escaping Read) {
        self.read = read
        buffer = [UInt8](repeating: 0, count: max(1, bufferSize))
        parser = InputFile.Parser(lineNumber: line)
        nextLineOffset = offset
        firstLine = offset == 0
    }

    /// The number of the last line read (1-based), for messages about where reading stopped.
    public var lineNumber: Int { parser.lineNumber }

    /// The byte offset in the input where the last line read starts. Right after ``next()`` returned an
    /// entry other than the last, that line starts the next entry: a reader made with this offset and
    /// ``lineNumber`` `- 1` (``init(bufferSize:resumingAt:afterLine:read:)``) reads the entries after the one
    /// returned, with their line numbers.
    public private(set) var lastLineOffset = 0

    /// The next entry, or nil at the end. Throws an ``InputFileError`` for a problem in the list, or what
    /// `read` throws.
    public func next() throws -> InputEntry? {
        while let line = try nextLine() {
            if let entry = try parser.add(line: line) { return entry }
        }
        return parser.finish()
    }

    /// The next line without its `\n` (the text after the last `\n` counts as a line, as in `parse`).
    private func nextLine() throws -> String? {
        while true {
            if let newline = buffer[start..<end].firstIndex(of: UInt8(ascii: "\n")) {
                advance(by: partial.count + newline + 1 - start)
                let line: String
                if partial.isEmpty {
                    line = decode(buffer[start..<newline])
                } else {
                    partial.append(contentsOf: buffer[start..<newline])
                    line = decode(partial[...])
                    partial.removeAll(keepingCapacity: false)
                }
                start = newline + 1
                return line
            }
            partial.append(contentsOf: buffer[start..<end])
            start = 0
            end = 0
            if atEnd {
                guard !lastLineGiven else { return nil }
                lastLineGiven = true
                let line = decode(partial[...])
                advance(by: partial.count)
                partial = []
                return line
            }
            let count = try buffer.withUnsafeMutableBytes { try read($0) }
            if count <= 0 { atEnd = true } else { end = count }
        }
    }

    /// A line of `count` bytes (its `\n` included) was given.
    private func advance(by count: Int) {
        lastLineOffset = nextLineOffset
        nextLineOffset += count
    }

    private func decode(_ bytes: ArraySlice<UInt8>) -> String {
        var bytes = bytes
        if firstLine {
            firstLine = false
            // A UTF-8 byte order mark at the start of the file.
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
