extension DownloadRequest {
    /// The download of one file of a Metalink into `directory`, under its Metalink name (which may name
    /// subdirectories, created as needed): its URLs in order of preference (the first is ``url``, the others
    /// ``mirrors``), its strongest whole-file hash Haul verifies as ``checksum``
    /// (``MetalinkFile/strongestChecksum``), its piece hashes (`<pieces>` of sha-256, sha-512, sha-1 or
    /// md5) as ``pieceHashes``, each piece checked as its bytes are written, and its `<size>` as
    /// ``expectedSize``: a server that serves another length is refused before its body is written, hash or
    /// not. Piece hashes of a type Haul does not have (`sha-384`, say) are left out.
    /// Throws when the file has no `http` or `https` URL, its name is not safe, or its piece hashes do not
    /// cover its size (only possible for a ``MetalinkFile`` built by hand: parsing refuses all three).
    public init(metalink file: MetalinkFile, directory: String, replacesExisting: Bool = false,
                ifChangedOnServer: ChangePolicy = .fail, discardsPartialDownload: Bool = false) throws(MetalinkError) {
        guard let name = MetalinkFile.checkedName(file.name) else {
            throw MetalinkError(offset: file.documentOffset, "file name \"\(TerminalSafe.text(file.name))\" is refused: it is absolute, climbs out of the directory (..), or has an unsafe component")
        }
        guard let first = file.urls.first else {
            throw MetalinkError(offset: file.documentOffset, "file \"\(name)\" has no http or https URL")
        }
        var pieceHashes: PieceHashes?
        if let pieces = file.pieces, let algorithm = pieces.algorithm {
            do {
                let hashes = try PieceHashes(length: pieces.length, algorithm: algorithm, digests: pieces.hashes)
                if let size = file.size { try hashes.check(size: size) }
                pieceHashes = hashes
            } catch {
                throw MetalinkError(offset: file.documentOffset, "file \"\(name)\": \(error)")
            }
        }
        let path = directory.isEmpty ? name : directory.hasSuffix("/") ? directory + name : directory + "/" + name
        self.init(url: first.url, mirrors: file.urls.dropFirst().map(\.url), destination: .file(path),
                  createsDirectories: true, replacesExisting: replacesExisting, checksum: file.strongestChecksum,
                  ifChangedOnServer: ifChangedOnServer, discardsPartialDownload: discardsPartialDownload)
        self.pieceHashes = pieceHashes
        expectedSize = file.size
    }
}
