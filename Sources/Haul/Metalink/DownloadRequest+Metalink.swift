extension DownloadRequest {
    /// The download of one file of a Metalink into `directory`, under its Metalink name (which may name
    /// subdirectories, created as needed): its URLs in order of preference (the first is ``url``, the others
    /// ``mirrors``) and its strongest whole-file hash Haul verifies as ``checksum``
    /// (``MetalinkFile/strongestChecksum``), and its `<size>` as ``expectedSize``: a server that serves another
    /// length is refused before its body is written, hash or not. Piece hashes are not verified.
    /// Throws when the file has no `http` or `https` URL, or its name is not safe (only possible for a
    /// ``MetalinkFile`` built by hand: parsing refuses such names).
    public init(metalink file: MetalinkFile, directory: String, replacesExisting: Bool = false,
                ifChangedOnServer: ChangePolicy = .fail, discardsPartialDownload: Bool = false) throws(MetalinkError) {
        guard let name = MetalinkFile.checkedName(file.name) else {
            throw MetalinkError(offset: file.documentOffset, "file name \"\(TerminalSafe.text(file.name))\" is refused: it is absolute, climbs out of the directory (..), or has an unsafe component")
        }
        guard let first = file.urls.first else {
            throw MetalinkError(offset: file.documentOffset, "file \"\(name)\" has no http or https URL")
        }
        let path = directory.isEmpty ? name : directory.hasSuffix("/") ? directory + name : directory + "/" + name
        self.init(url: first.url, mirrors: file.urls.dropFirst().map(\.url), destination: .file(path),
                  createsDirectories: true, replacesExisting: replacesExisting, checksum: file.strongestChecksum,
                  ifChangedOnServer: ifChangedOnServer, discardsPartialDownload: discardsPartialDownload)
        expectedSize = file.size
    }
}
