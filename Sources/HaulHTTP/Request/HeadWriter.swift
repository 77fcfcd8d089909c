/// Writes a request head into memory reserved for all of it, each piece copied straight into place.
///
/// The caller reserves an upper bound of the head's size; every write checks that it fits in what is left
/// (a bound computed too small stops the program rather than writing past the memory).
struct HeadWriter {
    private let start: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    /// The bytes written so far.
    private(set) var count = 0

    /// A writer at the start of `buffer`, whose memory it initializes.
    init(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
        precondition(buffer.count > 0, "a request head needs room")
        start = buffer.baseAddress!
        capacity = buffer.count
    }

    @inline(__always)
    private func claim(_ length: Int) {
        precondition(length <= capacity &- count, "a request head outgrew the room reserved for it")
    }

    mutating func write(_ bytes: UnsafeBufferPointer<UInt8>) {
        claim(bytes.count)
        if let source = bytes.baseAddress { (start + count).initialize(from: source, count: bytes.count) }
        count &+= bytes.count
    }

    mutating func write(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) {
        write(UnsafeBufferPointer(rebasing: bytes))
    }

    /// A literal's bytes (named apart from `writeText`: a literal would pick the `String` overload).
    mutating func writeLiteral(_ text: StaticString) {
        text.withUTF8Buffer { write($0) }
    }

    /// A string's UTF-8 bytes, from its storage (`inout`: a native string is read in place).
    mutating func writeText(_ text: inout String) {
        text.withUTF8 { write($0) }
    }

    mutating func writeByte(_ byte: UInt8) {
        claim(1)
        (start + count).initialize(to: byte)
        count &+= 1
    }

    /// `value` in decimal ASCII digits, as `String(value)` spells it.
    mutating func writeDecimal(_ value: UInt64) {
        var length = 1
        var rest = value / 10
        while rest > 0 {
            length &+= 1
            rest /= 10
        }
        claim(length)
        var remaining = value
        var index = count &+ length
        repeat {
            index &-= 1
            (start + index).initialize(to: UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: remaining % 10))
            remaining /= 10
        } while remaining > 0
        count &+= length
    }

    /// `value` in decimal ASCII digits, a minus sign first when negative.
    mutating func writeDecimal(_ value: Int64) {
        if value < 0 { writeByte(UInt8(ascii: "-")) }
        writeDecimal(value.magnitude)
    }

    /// The `Host` header value (``HTTPURL/hostHeader``) of `url`, whose host name `name` is, without making
    /// it a string first.
    mutating func writeHost(_ name: inout String, of url: HTTPURL) {
        if url.host.kind == .ipv6 {
            writeByte(UInt8(ascii: "["))
            writeText(&name)
            writeByte(UInt8(ascii: "]"))
        } else {
            writeText(&name)
        }
        if !url.isDefaultPort {
            writeByte(UInt8(ascii: ":"))
            writeDecimal(UInt64(url.port))
        }
    }
}
