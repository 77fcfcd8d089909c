extension String {
    /// The index of the last `/` byte in the string's UTF-8, as the kernel splits a path; nil when there is
    /// none.
    ///
    /// Searched in the contiguous bytes, not through `utf8.lastIndex(of:)`: stepping a `String.UTF8View`
    /// index backwards checks each step, about 320 instructions per short path, paid several times for each
    /// of many small downloads. (Every native string's bytes are contiguous; a bridged one takes the slow
    /// way.)
    var lastSlashByteIndex: String.Index? {
        let slash = UInt8(ascii: "/")
        let offset = utf8.withContiguousStorageIfAvailable { bytes -> Int? in
            var index = bytes.count
            while index > 0 {
                index &-= 1
                if bytes[index] == slash { return index }
            }
            return nil
        }
        guard let offset else { return utf8.lastIndex(of: slash) }
        return offset.map { utf8.index(utf8.startIndex, offsetBy: $0) }
    }
}
