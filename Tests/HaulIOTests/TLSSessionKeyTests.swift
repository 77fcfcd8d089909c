import HaulHTTP
import Testing
@testable import HaulIO

@Suite("TLS session keys and store")
struct TLSSessionKeyTests {
    let proxy = try! ProxyURL("http://127.0.0.1:3128")

    @Test func sameNamePortAndRouteIsOneKey() throws {
        #expect(TLSSessionKey(serverName: "example.org", port: 443) == TLSSessionKey(serverName: "example.org", port: 443))
        #expect(TLSSessionKey(serverName: "example.org", port: 443, through: proxy)
            == TLSSessionKey(serverName: "example.org", port: 443, through: try ProxyURL("http://127.0.0.1:3128")))
    }

    @Test func anotherNameEvenForTheSameAddressIsAnotherKey() {
        let key = TLSSessionKey(serverName: "localhost", port: 8443)
        #expect(key != TLSSessionKey(serverName: "127.0.0.1", port: 8443))
        #expect(key != TLSSessionKey(serverName: "localhost.", port: 8443))
        // Names are kept as given: a spelling that would verify the same certificate still gets its own session.
        #expect(key != TLSSessionKey(serverName: "LOCALHOST", port: 8443))
    }

    @Test func anotherPortIsAnotherKey() {
        #expect(TLSSessionKey(serverName: "example.org", port: 443) != TLSSessionKey(serverName: "example.org", port: 8443))
    }

    @Test func routesNeverShareSessions() throws {
        let direct = TLSSessionKey(serverName: "example.org", port: 443)
        let tunnelled = TLSSessionKey(serverName: "example.org", port: 443, through: proxy)
        #expect(direct != tunnelled)
        #expect(tunnelled != TLSSessionKey(serverName: "example.org", port: 443, through: try ProxyURL("http://127.0.0.1:3129")))
        #expect(tunnelled != TLSSessionKey(serverName: "example.org", port: 443, through: try ProxyURL("socks5://127.0.0.1:3128")))
        // Another user of the same proxy is another route too.
        #expect(tunnelled != TLSSessionKey(serverName: "example.org", port: 443, through: try ProxyURL("http://alice:pw@127.0.0.1:3128")))
    }

    @Test func descriptionNamesTheRouteWithoutCredentials() throws {
        #expect(TLSSessionKey(serverName: "example.org", port: 443).description == "example.org:443")
        #expect(TLSSessionKey(serverName: "::1", port: 8443).description == "[::1]:8443")
        let key = TLSSessionKey(serverName: "example.org", port: 443, through: try ProxyURL("http://alice:secret@127.0.0.1:3128"))
        #expect(key.description.hasPrefix("example.org:443 through http://"))
        #expect(!key.description.contains("secret"))
    }

    @Test func theStoreOffersTheNewestSessionPerKey() {
        var store = TLSSessionStore<Int>(capacity: 4)
        let key = TLSSessionKey(serverName: "example.org", port: 443)
        #expect(store.session(for: key) == nil)
        #expect(store.store(1, for: key) == [])
        #expect(store.session(for: key) == 1)
        #expect(store.store(2, for: key) == [1], "the replaced session is handed back to be freed")
        #expect(store.session(for: key) == 2)
        #expect(store.session(for: TLSSessionKey(serverName: "example.org", port: 444)) == nil)
        #expect(store.session(for: TLSSessionKey(serverName: "example.org", port: 443, through: proxy)) == nil)
        #expect(store.count == 1)
    }

    @Test func aFullStoreEvictsTheKeyStoredLeastRecently() {
        var store = TLSSessionStore<String>(capacity: 2)
        let a = TLSSessionKey(serverName: "a.test", port: 443)
        let b = TLSSessionKey(serverName: "b.test", port: 443)
        let c = TLSSessionKey(serverName: "c.test", port: 443)
        #expect(store.store("a1", for: a) == [])
        #expect(store.store("b1", for: b) == [])
        // a's newer session makes b the least recently stored.
        #expect(store.store("a2", for: a) == ["a1"])
        #expect(store.store("c1", for: c) == ["b1"])
        #expect(store.count == 2)
        #expect(store.session(for: a) == "a2")
        #expect(store.session(for: b) == nil)
        #expect(store.session(for: c) == "c1")
    }

    @Test func removedSessionsAreHandedBack() {
        var store = TLSSessionStore<Int>(capacity: 8)
        let keys = (0..<5).map { TLSSessionKey(serverName: "h\($0).test", port: 443) }
        for (index, key) in keys.enumerated() { _ = store.store(index, for: key) }
        #expect(store.remove(keys[2]) == [2])
        #expect(store.remove(keys[2]) == [])
        #expect(store.removeAll().sorted() == [0, 1, 3, 4])
        #expect(store.count == 0)
    }

    @Test func aKeyKeepsItsNewestSessionsUpToItsShare() {
        var store = TLSSessionStore<Int>(capacity: 2, perKey: 3)
        let key = TLSSessionKey(serverName: "example.org", port: 443)
        let other = TLSSessionKey(serverName: "other.test", port: 443)
        for session in 1...3 { #expect(store.store(session, for: key) == []) }
        #expect(store.sessionCount(for: key) == 3)
        #expect(store.store(4, for: key) == [1], "the oldest makes room")
        #expect(store.session(for: key) == 4, "the newest is offered first")
        // Taken newest first, each once; the key goes with its last session.
        #expect(store.takeNewest(for: key) == 4)
        #expect(store.takeNewest(for: key) == 3)
        #expect(store.session(for: key) == 2)
        #expect(store.store(10, for: other) == [])
        #expect(store.takeNewest(for: key) == 2)
        #expect(store.count == 1, "a key with no session left is forgotten")
        #expect(store.takeNewest(for: key) == nil)
        #expect(store.session(for: other) == 10)
        // Eviction hands back every session of the key stored least recently.
        _ = store.store(11, for: other)
        _ = store.store(20, for: key)
        #expect(store.store(30, for: TLSSessionKey(serverName: "third.test", port: 443)) == [10, 11])
        #expect(store.removeAll().sorted() == [20, 30])
    }

    @Test func theContextKeepsABoundedNumberOfSessions() {
        #expect(TLSContext.sessionCacheCapacity == 64)
        var store = TLSSessionStore<Int>(capacity: TLSContext.sessionCacheCapacity)
        var released: [Int] = []
        for index in 0..<1_000 { released += store.store(index, for: TLSSessionKey(serverName: "h\(index).test", port: 443)) }
        #expect(store.count == 64)
        #expect(released == Array(0..<936), "the oldest go first, each handed back once")
    }
}
