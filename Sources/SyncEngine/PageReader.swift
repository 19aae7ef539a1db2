import RecordClient
import RecordModel

/// Reads a zone's change feed ahead of the pages being applied, from one token on: each answer
/// is decoded on a task of its own while the next page is already asked for (its token is read
/// from the answer before decoding), up to `depth` pages ahead. On a first sync of a big book
/// the server's answer, the decoding and the local writes would otherwise take turns.
final class PageReader: Sendable {
    /// The token the next page handed out was fetched with.
    private let buffer: PageBuffer
    private let producer: Task<Void, Never>

    init(from token: String?, database: any CloudDatabase, zoneID: ZoneID, depth: Int = 4) {
        let buffer = PageBuffer(capacity: depth)
        self.buffer = buffer
        producer = Task {
            var token = token
            // Bounded by the feed: it ends when the server says no more is coming, on the first
            // error, or when the reader is stopped.
            while !Task.isCancelled {
                let fetchedWith = token
                let decoding: Task<ZoneChangesPage, Error>
                let next: String?
                do {
                    let answer = try await database.fetchZoneChangesAnswer(zoneID: zoneID, syncToken: token, resultsLimit: nil)
                    decoding = Task { try answer.decode() }
                    next = answer.nextSyncToken
                } catch {
                    await buffer.put(ReadPage(token: fetchedWith, page: Task { throw error }))
                    return
                }
                await buffer.put(ReadPage(token: fetchedWith, page: decoding))
                if let next {
                    token = next
                } else {
                    // The next token is known only once the page is read.
                    guard let page = try? await decoding.value, page.moreComing else { return }
                    token = page.syncToken
                }
            }
        }
    }

    /// The page after `token`, or nil when this reader is not at that token (the caller then
    /// starts another reader). Throws the error fetching or decoding it met; the reader reads
    /// no further after one.
    func page(after token: String?) async throws -> ZoneChangesPage? {
        let next = await buffer.take()
        guard next.token == token else { return nil }
        return try await next.page.value
    }

    /// Stops reading ahead; pages read and not taken are dropped.
    func stop() {
        producer.cancel()
        let buffer = buffer
        Task { await buffer.close() }
    }
}

/// A page read ahead: the token it was asked for with, and its decoding.
private struct ReadPage: Sendable {
    let token: String?
    let page: Task<ZoneChangesPage, Error>
}

/// The pages read ahead, in feed order; the reader waits while `capacity` are waiting to be taken.
private actor PageBuffer {
    private let capacity: Int
    private var pages: [ReadPage] = []
    private var taker: CheckedContinuation<ReadPage, Never>?
    private var putter: CheckedContinuation<Void, Never>?
    private var closed = false

    init(capacity: Int) { self.capacity = capacity }

    func put(_ page: ReadPage) async {
        guard !closed else { return }
        if let taker {
            self.taker = nil
            taker.resume(returning: page)
            return
        }
        pages.append(page)
        if pages.count >= capacity { await withCheckedContinuation { putter = $0 } }
    }

    func take() async -> ReadPage {
        if pages.isEmpty { return await withCheckedContinuation { taker = $0 } }
        let page = pages.removeFirst()
        putter?.resume()
        putter = nil
        return page
    }

    /// Lets a waiting reader go and takes no more pages.
    func close() {
        closed = true
        pages.removeAll()
        putter?.resume()
        putter = nil
    }
}
