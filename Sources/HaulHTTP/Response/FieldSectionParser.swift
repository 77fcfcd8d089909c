import CHaulScan

/// Parses a block of lines that ends with an empty line: a response head (status line, then fields) or a
/// trailer section (fields only).
///
/// When the whole section arrives in one piece it is validated in place and copied once, into the array that
/// the section's `HTTPFields` shares (bytes, then entries); otherwise the pieces are gathered (up to the
/// size limit), each complete line is validated exactly once, so feeding one byte at a time costs no more
/// than feeding everything at once, and the gathered bytes are copied into that array at the end. Every check looks only at bytes up to
/// the one it judges, which is what makes the result independent of how the input was split.
struct FieldSectionParser {
    enum Mode { case responseHead, trailers }

    struct StatusLine {
        var major = 1
        var minor = 1
        var status = 0
        var reasonStart = 0
        var reasonEnd = 0
    }

    private(set) var mode: Mode
    private let headLimit: Int
    private let trailerLimit: Int
    private var limit: Int { mode == .responseHead ? headLimit : trailerLimit }
    private let maxFields: Int
    /// Stream offset of the section's first byte, for error offsets.
    private var sectionOffset: Int

    /// The section's bytes gathered so far, only when it spans several inputs.
    private(set) var storage: [UInt8] = []
    /// Entries of the lines validated so far when they are more than the fast path's table holds at once, or
    /// when lines were validated in several calls; never handed out, so it is refilled without copying.
    private var entries: [HTTPFields.Entry] = []
    /// The completed section's fields. The parser keeps them to overwrite for the next section: in place
    /// when the caller let go of the last one, so a section costs one retain/release pair and no allocation.
    private var completed = HTTPFields()
    /// The completed section's length in bytes.
    private(set) var completedLength = 0
    /// Bit k is set when field k's name has the length of Connection, Content-Length or Transfer-Encoding
    /// (10, 14, 17), so that framing looks at those fields alone; all bits are set once a field past the
    /// 64th has such a length. Noted while the lines are parsed, where the name's length is at hand.
    private(set) var framingCandidates: UInt64 = 0
    private(set) var statusLine = StatusLine()
    private var statusLineDone: Bool
    /// Start of the first line not yet validated.
    private var lineStart = 0
    /// Byte ranges of obs-folds (the whitespace before the CR LF, the CR LF and the whitespace after it),
    /// each turned into as many spaces once the section is stored: the stored bytes are rewritten rather than
    /// copied, so a folded value stays one slice of the section.
    private var folds: [Range<Int>] = []

    init(mode: Mode, headLimit: Int, trailerLimit: Int, maxFields: Int, sectionOffset: Int) {
        self.mode = mode
        self.headLimit = headLimit
        self.trailerLimit = trailerLimit
        self.maxFields = maxFields
        self.sectionOffset = sectionOffset
        self.statusLineDone = mode == .trailers
    }

    /// Starts a new section, keeping the buffers' capacity when nobody else holds them.
    mutating func reset(mode: Mode, sectionOffset: Int) {
        self.mode = mode
        self.sectionOffset = sectionOffset
        if !storage.isEmpty { storage.removeAll(keepingCapacity: true) }
        if !entries.isEmpty { entries.removeAll(keepingCapacity: true) }
        if !folds.isEmpty { folds.removeAll(keepingCapacity: true) }
        framingCandidates = 0
        statusLine = StatusLine()
        statusLineDone = mode == .trailers
        lineStart = 0
    }

    /// Bytes of this section received so far.
    var receivedCount: Int { storage.count }

    /// The completed section's fields.
    var fields: HTTPFields { completed }

    private func tooLarge() -> HTTPParseError.Kind {
        mode == .responseHead ? .headTooLarge(limit: limit) : .trailersTooLarge(limit: limit)
    }

    /// Feeds bytes; returns how many belong to this section and whether it is complete.
    mutating func feed(_ input: UnsafeRawBufferPointer) throws(HTTPParseError) -> (consumed: Int, complete: Bool) {
        if storage.isEmpty {
            let window = UnsafeRawBufferPointer(rebasing: input[0..<min(input.count, limit)])
            switch try parseLines(window) {
            case .complete(let end):
                return (end, true)
            case .incomplete:
                if window.count == limit { throw HTTPParseError(tooLarge(), offset: sectionOffset + limit) }
                storage.append(contentsOf: window)
                return (window.count, false)
            }
        }

        let previous = storage.count
        let taken = min(input.count, limit - previous)
        storage.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[0..<taken]))
        // Only a new LF (or a full buffer) can complete a line; until then re-validating would be wasted.
        let sawLineEnd = UnsafeRawBufferPointer(rebasing: input[0..<taken]).contains(asciiLF)
        guard sawLineEnd || storage.count == limit else { return (taken, false) }
        switch try parseStoredLines() {
        case .complete(let end):
            return (end - previous, true)
        case .incomplete:
            if storage.count == limit { throw HTTPParseError(tooLarge(), offset: sectionOffset + limit) }
            return (taken, false)
        }
    }

    /// At end of stream: surfaces a syntax error in what was received, or reports the section incomplete.
    mutating func finishIncomplete() throws(HTTPParseError) -> Never {
        _ = try parseStoredLines()
        let what = mode == .responseHead ? "response head" : "trailer section"
        throw HTTPParseError(.incompleteMessage("\(what) cut short after \(storage.count) bytes"),
                             offset: sectionOffset + storage.count)
    }

    /// Stores the completed section: its first `end` bytes at `p`, folds turned into spaces, then the entries
    /// gathered in `entries` followed by `table`, as one array.
    @inline(__always)
    private mutating func complete(_ p: UnsafePointer<UInt8>, end: Int, table: UnsafeBufferPointer<HTTPFields.Entry>) {
        let offset = HTTPFields.entriesOffset(afterBytes: end)
        let stride = MemoryLayout<HTTPFields.Entry>.stride
        let gathered = entries.count
        let total = offset &+ (gathered &+ table.count) &* stride
        // Room for the usual head, so the array is rarely replaced; bytes past `total` are left as they are.
        if completed.storage.count < total { completed.storage = [UInt8](repeating: 0, count: max(total, 1024)) }
        entries.withUnsafeBytes { gatheredEntries in
            // Copies the array first only when a caller still holds the last section's fields.
            completed.storage.withUnsafeMutableBytes { raw in
                let base = raw.baseAddress!
                // The padding before the entries keeps whatever it held: nothing reads it.
                base.copyMemory(from: p, byteCount: end)
                if gathered > 0 {
                    (base + offset).copyMemory(from: gatheredEntries.baseAddress!, byteCount: gatheredEntries.count)
                }
                if table.count > 0 {
                    (base + (offset &+ gathered &* stride)).copyMemory(from: table.baseAddress!, byteCount: table.count &* stride)
                }
            }
        }
        completed.entriesOffset = Int32(truncatingIfNeeded: offset)
        completed.entryCount = Int32(truncatingIfNeeded: gathered &+ table.count)
        completedLength = end
        if !folds.isEmpty {
            completed.storage.withUnsafeMutableBufferPointer { bytes in
                for fold in folds {
                    for position in fold { bytes[position] = asciiSP }
                }
            }
        }
    }

    private enum Progress { case complete(end: Int), incomplete }

    /// Parses the gathered bytes. A second reference to `storage` keeps them readable while `self` mutates
    /// (parsing never writes to `storage`, so no copy is made).
    private mutating func parseStoredLines() throws(HTTPParseError) -> Progress {
        let bytes = storage
        let outcome = bytes.withUnsafeBytes { raw in
            Result { () throws(HTTPParseError) -> Progress in try parseLines(raw) }
        }
        return try outcome.get()
    }

    private func fail(_ kind: HTTPParseError.Kind, _ position: Int) -> HTTPParseError {
        HTTPParseError(kind, offset: sectionOffset + position)
    }

    /// Validates complete lines from `lineStart` on; stops at the first incomplete line.
    private mutating func parseLines(_ buffer: UnsafeRawBufferPointer) throws(HTTPParseError) -> Progress {
        let n = buffer.count
        guard n > 0 else { return .incomplete }
        let p = buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
        if let end = takePlainLines(p, n) { return .complete(end: end) }
        let table = ByteClass.table
        var i = lineStart
        if !statusLineDone {
            guard let next = try parseStatusLine(buffer, from: i) else { return .incomplete }
            i = next
            statusLineDone = true
            lineStart = i
        }
        while true {
            lineStart = i
            guard i < n else { return .incomplete }
            let first = p[i]
            if first == asciiCR {
                guard i + 1 < n else { return .incomplete }
                guard p[i + 1] == asciiLF else { throw fail(.bareCR, i) }
                complete(p, end: i + 2, table: UnsafeBufferPointer(start: nil, count: 0))
                return .complete(end: i + 2)
            }
            if first == asciiLF { throw fail(.bareLF, i) }

            let isFold = first == asciiSP || first == asciiHT
            if isFold && entries.isEmpty { throw fail(.obsFoldWithoutField, i) }

            var j = i
            var nameEnd = i
            if !isFold {
                j = ByteClass.skipToken(p, from: i, to: n, table: table)
                guard j < n else { return .incomplete }
                let c = p[j]
                if c != asciiColon || j == i {
                    throw fail(nameError(p, lineStart: i, stop: j), j)
                }
                nameEnd = j
                j &+= 1
            }
            while j < n && (p[j] == asciiSP || p[j] == asciiHT) { j &+= 1 }
            let valueStart = j
            j = ByteClass.skipFieldContent(p, from: j, to: n, table: table)
            guard j < n else { return .incomplete }
            let c = p[j]
            if c == asciiCR {
                guard j + 1 < n else { return .incomplete }
                guard p[j + 1] == asciiLF else { throw fail(.bareCR, j) }
            } else if c == asciiLF {
                throw fail(.bareLF, j)
            } else {
                let name = isFold ? entries[entries.count - 1].nameRange : i..<nameEnd
                throw fail(.invalidFieldValueCharacter(field: latin1String(UnsafeBufferPointer(rebasing: UnsafeBufferPointer(start: p, count: n)[name])), byte: c), j)
            }
            var valueEnd = j
            while valueEnd > valueStart && (p[valueEnd - 1] == asciiSP || p[valueEnd - 1] == asciiHT) { valueEnd &-= 1 }

            if isFold {
                // RFC 9112 §5.2: the whole fold, `OWS CRLF RWS`, becomes spaces, so no tab of it survives in
                // the value; the value now runs through this line. The whitespace before the CR belongs to the
                // line above (already validated), and stops at its colon or its last non-blank byte.
                let last = entries.count - 1
                var foldStart = i - 2
                while p[foldStart - 1] == asciiSP || p[foldStart - 1] == asciiHT { foldStart &-= 1 }
                folds.append(foldStart..<valueStart)
                if valueEnd > valueStart {
                    if entries[last].valueStart == entries[last].valueEnd { entries[last].valueStart = Int32(valueStart) }
                    entries[last].valueEnd = Int32(valueEnd)
                }
            } else {
                if entries.count == maxFields { throw fail(.tooManyFields(limit: maxFields), i) }
                noteFramingCandidate(index: entries.count, nameLength: nameEnd &- i)
                entries.append(HTTPFields.Entry(nameStart: Int32(truncatingIfNeeded: i), nameEnd: Int32(truncatingIfNeeded: nameEnd),
                                                valueStart: Int32(truncatingIfNeeded: valueStart), valueEnd: Int32(truncatingIfNeeded: valueEnd)))
            }
            i = j &+ 2
        }
    }

    /// The common case, taken quickly: a plain status line (`HTTP/1.x NNN reason`), then complete plain field
    /// lines (a token, a colon, field content, CR LF) up to the empty line that ends the section.
    ///
    /// It takes lines from `lineStart` for as long as they are plain and stops, without judging it, at the
    /// first that is not: incomplete, folded, malformed, or one field over the limit. The general loop then
    /// parses that line and the rest, so every error (and every verdict on an unusual line) is the general
    /// loop's alone; a plain line gives the same entry either way. Returns the end of the section when it
    /// reached the empty line; otherwise nil, with `lineStart` (and the status line) advanced past what it
    /// took.
    ///
    /// Speed comes from finding line ends for 64 bytes at a time (`ControlBytes`), so each line's name scan
    /// does not wait for the previous line's scans, and from writing entries into a stack table that is
    /// copied once, straight into the completed section's array when the section ends here.
    @inline(__always)
    private mutating func takePlainLines(_ p: UnsafePointer<UInt8>, _ n: Int) -> Int? {
        var i = lineStart
        var controls = ControlBytes(p, n, from: i)
        if !statusLineDone {
            guard let line = Self.plainStatusLine(p, n, from: i, &controls) else { return nil }
            statusLine = line.statusLine
            statusLineDone = true
            i = line.next
            lineStart = i
        }
        let table = ByteClass.table
        let crlf = UInt16(asciiLF) &<< 8 | UInt16(asciiCR)
        var room = maxFields &- entries.count
        return withUnsafeTemporaryAllocation(of: HTTPFields.Entry.self, capacity: 32) { scratch -> Int? in
            let table32 = scratch.baseAddress!
            var taken = 0
            var end: Int? = nil
            while true {
                // The line ends at its first control byte other than HTAB (which field content allows).
                var e = controls.next()
                while e < n && p[e] == asciiHT { e = controls.next() }
                guard e &+ 1 < n && UnsafeRawPointer(p + e).loadUnaligned(as: UInt16.self) == crlf else { break }
                _ = controls.next()  // the LF at e + 1
                if e == i {
                    end = e &+ 2
                    complete(p, end: e &+ 2, table: UnsafeBufferPointer(start: table32, count: taken))
                    taken = 0
                    break
                }
                // The name runs to the first non-token byte, which must be a colon; CR is not a token byte, so
                // the name cannot run past this line.
                let colon = ByteClass.skipToken(p, from: i, to: n, table: table)
                guard colon != i && p[colon] == asciiColon && room > 0 else { break }
                // Usually one space before the value and none after it; p[e] is CR, so neither loop runs past it.
                var valueStart = colon &+ 1
                if p[valueStart] == asciiSP { valueStart &+= 1 }
                while p[valueStart] == asciiSP || p[valueStart] == asciiHT { valueStart &+= 1 }
                var valueEnd = e
                while valueEnd > valueStart && (p[valueEnd &- 1] == asciiSP || p[valueEnd &- 1] == asciiHT) { valueEnd &-= 1 }
                let nameLength = colon &- i
                if nameLength == 10 || nameLength == 14 || nameLength == 17 {
                    noteFramingCandidate(index: entries.count &+ taken, nameLength: nameLength)
                }
                if taken == 32 {
                    entries.append(contentsOf: UnsafeBufferPointer(start: table32, count: taken))
                    taken = 0
                }
                table32[taken] = HTTPFields.Entry(nameStart: Int32(truncatingIfNeeded: i), nameEnd: Int32(truncatingIfNeeded: colon),
                                                  valueStart: Int32(truncatingIfNeeded: valueStart), valueEnd: Int32(truncatingIfNeeded: valueEnd))
                taken &+= 1
                room &-= 1
                i = e &+ 2
            }
            if taken > 0 { entries.append(contentsOf: UnsafeBufferPointer(start: table32, count: taken)) }
            lineStart = i
            return end
        }
    }

    /// `HTTP/1.x NNN reason CR LF` with a space after the code, complete, or nil for anything else (which
    /// `parseStatusLine` then judges).
    @inline(__always)
    private static func plainStatusLine(_ p: UnsafePointer<UInt8>, _ n: Int, from i: Int,
                                        _ controls: inout ControlBytes) -> (statusLine: StatusLine, next: Int)? {
        guard n &- i >= 14 else { return nil }
        // "HTTP/1." as the low seven bytes of a little-endian load.
        let word = UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)
        guard word & 0x00FF_FFFF_FFFF_FFFF == 0x002E_312F_5054_5448 else { return nil }
        let minor = p[i &+ 7] &- 0x30, d0 = p[i &+ 9] &- 0x30, d1 = p[i &+ 10] &- 0x30, d2 = p[i &+ 11] &- 0x30
        guard minor < 10 && d0 < 10 && d1 < 10 && d2 < 10 && d0 != 0 else { return nil }
        guard p[i &+ 8] == asciiSP && p[i &+ 12] == asciiSP else { return nil }
        let reasonStart = i &+ 13
        // The 13 bytes checked above hold no control byte, so the first one handed out ends the reason.
        var e = controls.next()
        while e < n && p[e] == asciiHT { e = controls.next() }
        guard e &+ 1 < n && p[e] == asciiCR && p[e &+ 1] == asciiLF else { return nil }
        _ = controls.next()  // the LF at e + 1
        let status = Int(d0) &* 100 &+ Int(d1) &* 10 &+ Int(d2)
        return (StatusLine(major: 1, minor: Int(minor), status: status, reasonStart: reasonStart, reasonEnd: e), e &+ 2)
    }

    /// Why a field name stopped at `stop` (a byte that is not a token character, or an empty name).
    private func nameError(_ p: UnsafePointer<UInt8>, lineStart: Int, stop: Int) -> HTTPParseError.Kind {
        let c = p[stop]
        if stop == lineStart {
            return c == asciiCR || c == asciiLF || c == asciiColon ? .emptyFieldName : .invalidFieldNameCharacter(byte: c)
        }
        if c == asciiSP || c == asciiHT {
            return .whitespaceBeforeColon(field: latin1String(UnsafeBufferPointer(start: p + lineStart, count: stop - lineStart)))
        }
        return .invalidFieldNameCharacter(byte: c)
    }

    @inline(__always)
    private mutating func noteFramingCandidate(index: Int, nameLength: Int) {
        guard nameLength == 10 || nameLength == 14 || nameLength == 17 else { return }
        framingCandidates |= index < 64 ? 1 &<< UInt64(index) : UInt64.max
    }

    /// What the completed head's framing fields say (see `FramingFields`).
    func framingFields(headOffset: Int) throws(HTTPParseError) -> FramingFields {
        let candidates = framingCandidates
        let offset = Int(completed.entriesOffset)
        let count = completed.count
        return try completed.storage.withUnsafeBufferPointer { bytes throws(HTTPParseError) in
            let entries = UnsafeRawPointer(bytes.baseAddress! + offset)
            return try FramingFields(bytes, entries: entries, count: count, candidates: candidates, headOffset: headOffset)
        }
    }

    /// `HTTP-version SP status-code SP reason-phrase CRLF`; nil when the line is not complete yet.
    private mutating func parseStatusLine(_ p: UnsafeRawBufferPointer, from start: Int) throws(HTTPParseError) -> Int? {
        let n = p.count
        var i = start
        for expected in "HTTP/".utf8 {
            guard i < n else { return nil }
            guard p[i] == expected else { throw fail(.invalidStatusLine("expected \"HTTP/\""), i) }
            i += 1
        }
        guard i + 3 <= n else {
            // Judge whatever version bytes did arrive, so a bad one fails at once.
            if i < n && !isDigit(p[i]) { throw fail(.invalidStatusLine("malformed HTTP version"), i) }
            if i + 1 < n && p[i + 1] != UInt8(ascii: ".") { throw fail(.invalidStatusLine("malformed HTTP version"), i + 1) }
            return nil
        }
        guard isDigit(p[i]) else { throw fail(.invalidStatusLine("malformed HTTP version"), i) }
        guard p[i + 1] == UInt8(ascii: ".") else { throw fail(.invalidStatusLine("malformed HTTP version"), i + 1) }
        guard isDigit(p[i + 2]) else { throw fail(.invalidStatusLine("malformed HTTP version"), i + 2) }
        let major = Int(p[i] - 0x30), minor = Int(p[i + 2] - 0x30)
        guard major == 1 else { throw fail(.unsupportedVersion(major: major, minor: minor), start) }
        i += 3
        guard i < n else { return nil }
        guard p[i] == asciiSP else { throw fail(.invalidStatusLine("expected a space after the HTTP version"), i) }
        i += 1
        var code = 0
        for k in 0..<3 {
            guard i < n else { return nil }
            guard isDigit(p[i]) else {
                throw fail(.invalidStatusCode(latin1String(UnsafeRawBufferPointer(rebasing: p[(i - k)...i]))), i)
            }
            code = code * 10 + Int(p[i] - 0x30)
            i += 1
        }
        // RFC 9110 §15: any three digits from 100 are a status code; one without a known class is the
        // caller's to judge (see `ResponseHead.status`).
        guard code >= 100 else { throw fail(.invalidStatusCode(String(code)), i - 3) }
        guard i < n else { return nil }
        var reasonStart = i
        if p[i] == asciiSP {
            i += 1
            reasonStart = i
            i = ByteClass.skipFieldContent(p.baseAddress!.assumingMemoryBound(to: UInt8.self), from: i, to: n, table: ByteClass.table)
            guard i < n else { return nil }
        }
        let reasonEnd = i
        switch p[i] {
        case asciiCR:
            guard i + 1 < n else { return nil }
            guard p[i + 1] == asciiLF else { throw fail(.bareCR, i) }
        case asciiLF:
            throw fail(.bareLF, i)
        default:
            if reasonStart == reasonEnd && p[i - 1] != asciiSP {
                throw fail(.invalidStatusLine("expected a space after the status code"), i)
            }
            throw fail(.invalidReasonPhrase(byte: p[i]), i)
        }
        statusLine = StatusLine(major: major, minor: minor, status: code, reasonStart: reasonStart, reasonEnd: reasonEnd)
        return i + 2
    }
}

@inline(__always) func isDigit(_ b: UInt8) -> Bool { b &- 0x30 < 10 }

extension HTTPFields.Entry {
    var nameRange: Range<Int> { Int(nameStart)..<Int(nameEnd) }
}

/// Positions of control bytes (and DEL) in `p[start..<n]`, found for 64 bytes at a time (aligned to `p`) and
/// handed out in order, each once. Taking the next one clears the lowest bit of the block's mask, so the
/// line ends of a head come out at a cycle or two apiece, without waiting on the work done for each line.
struct ControlBytes {
    private let p: UnsafePointer<UInt8>
    private let n: Int
    /// The 64-byte block `bits` describes, by index.
    private var block: Int
    /// Control bytes of `block` not handed out yet.
    private var bits: UInt64

    @inline(__always)
    init(_ p: UnsafePointer<UInt8>, _ n: Int, from start: Int) {
        self.p = p
        self.n = n
        block = start &>> 6
        bits = start < n ? haul_control_mask64(p, block &<< 6, n) & (UInt64.max &<< UInt64(start & 63)) : 0
    }

    /// The next control byte's position, or `n` when there is none.
    @inline(__always)
    mutating func next() -> Int {
        while bits == 0 {
            block &+= 1
            let start = block &<< 6
            guard start < n else {
                block &-= 1
                return n
            }
            bits = haul_control_mask64(p, start, n)
        }
        let position = block &<< 6 | bits.trailingZeroBitCount
        bits &= bits &- 1
        return position
    }
}
