import Testing
import HaulHTTP
@testable import HaulIO
@testable import Haul
import HaulTestSupport
import SystemPackage

/// ``StoredValidators``: the server's validators kept in a finished file's extended attributes, read back
/// as written; a descriptor that takes no attributes costs nothing but the attributes.
@Suite struct StoredValidatorsTests {
    @Test func validatorsWrittenOnAFileAreReadBackExactly() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("f.bin")
        let file = try FileDescriptor.opening(FilePath(path), .writeOnly, options: [.create], permissions: [.ownerReadWrite])
        let stored = StoredValidators(entityTag: "\"5f5e1000-493e0\"", lastModified: "Sun, 13 Sep 2020 12:26:40 GMT",
                                      url: "http://a.test/f.bin")
        stored.write(on: file.descriptor)
        #expect(StoredValidators.read(path: path) == stored)
        #expect(FileDescriptor.extendedAttribute(StoredValidators.lastModifiedAttribute, ofPath: path)
                    == Array("Sun, 13 Sep 2020 12:26:40 GMT".utf8))
    }

    @Test func aFileWithoutAttributesHasNoValidators() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("plain.bin")
        _ = try FileDescriptor.opening(FilePath(path), .writeOnly, options: [.create], permissions: [.ownerReadWrite])
        #expect(StoredValidators.read(path: path) == StoredValidators(entityTag: nil, lastModified: nil, url: nil))
        #expect(StoredValidators.read(path: directory.file("missing")) == StoredValidators(entityTag: nil, lastModified: nil, url: nil))
    }

    @Test func aDescriptorWithoutAttributeSupportIsSkippedQuietly() throws {
        let (readEnd, writeEnd) = try FileDescriptor.openingSignalPipe()
        defer { try? readEnd.close(); try? writeEnd.close() }
        // A pipe takes no user attributes: the write gives up without a word (and without a crash).
        StoredValidators(entityTag: "\"x\"", lastModified: nil, url: nil).write(on: writeEnd)
        #expect(throws: SystemError.self) { try writeEnd.setExtendedAttribute("user.haul.etag", to: Array("\"x\"".utf8)) }
    }

    @Test func remoteTimeIsSetOnTheDescriptor() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("t.bin")
        let file = try FileDescriptor.opening(FilePath(path), .writeOnly, options: [.create], permissions: [.ownerReadWrite])
        try file.descriptor.setModificationTime(secondsSinceEpoch: 1_500_000_000)
        #expect(FileDescriptor.modificationTime(ofPath: path) == 1_500_000_000)
    }
}
