extension String {
    /// Runs `body` on the string's UTF-8 bytes where they lie (a native string's always are contiguous; any
    /// other is copied into a contiguous one first).
    ///
    /// For byte searches and checks on paths and names that run for every file of a long list: the generic
    /// algorithms on `String.UTF8View` (`lastIndex(of:)`, `starts(with:)`, `contains`, `allSatisfy`) step
    /// its checked indices, tens of instructions per byte, hundreds per short path.
    @inlinable
    public func withUTF8Bytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        if let result = try utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = self
        return try copy.withUTF8(body)
    }

    /// The index of the last `/` byte in the string's UTF-8, where the kernel splits a path; nil when there
    /// is none.
    public var lastSlashByteIndex: String.Index? {
        let offset = withUTF8Bytes { bytes -> Int? in
            var index = bytes.count
            while index > 0 {
                index &-= 1
                if bytes[index] == UInt8(ascii: "/") { return index }
            }
            return nil
        }
        return offset.map { utf8.index(utf8.startIndex, offsetBy: $0) }
    }
}
