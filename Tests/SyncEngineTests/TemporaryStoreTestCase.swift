import Foundation
@testable import SyncEngine
import XCTest

/// A test case with a store in a folder of its own, removed after each test.
class TemporaryStoreTestCase: XCTestCase {
    var store: LocalRecordStore!
    var path: String!

    override func setUpWithError() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("store-\(UUID().uuidString)/s.sqlite").path
        store = try LocalRecordStore(path: path)
    }

    override func tearDown() {
        store = nil
        try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent)
    }
}
