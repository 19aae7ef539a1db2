import Foundation
import RecordModel

/// One device's notification channel, from `tokens/create`.
public struct NotificationChannel: Sendable, Equatable {
    public var apnsToken: String
    public var webcourierURL: String

    public init(apnsToken: String, webcourierURL: String) {
        self.apnsToken = apnsToken
        self.webcourierURL = webcourierURL
    }
}

/// A notification in the CloudKit push shape (`ck.qry`, `ck.fet` or `ck.met`).
public struct PushNotification: Sendable, Equatable {
    public enum Kind: String, Sendable { case query, zone, database }
    public enum Reason: Int, Sendable { case created = 1, updated = 2, deleted = 3 }

    public var notificationID: String?
    public var kind: Kind
    public var subscriptionID: String?
    public var zoneName: String?
    /// The zone's owner (`zoid`).
    public var ownerRecordName: String?
    /// The database that fired it (`dbs`: 1 public, 2 private, 3 shared).
    public var databaseScope: Int?
    /// For query notifications: the record concerned and what happened to it.
    public var recordName: String?
    public var reason: Reason?

    public init?(json: JSONValue) {
        guard let ck = json["ck"] else { return nil }
        notificationID = ck["nid"]?.stringValue
        let body: JSONValue
        if let query = ck["qry"] {
            kind = .query
            body = query
        } else if let zone = ck["fet"] {
            kind = .zone
            body = zone
        } else if let database = ck["met"] {
            kind = .database
            body = database
        } else {
            return nil
        }
        subscriptionID = body["sid"]?.stringValue
        zoneName = body["zid"]?.stringValue
        ownerRecordName = body["zoid"]?.stringValue
        databaseScope = body["dbs"]?.int64Value.map { Int($0) }
        recordName = body["rid"]?.stringValue
        reason = body["fo"]?.int64Value.flatMap { Reason(rawValue: Int($0)) }
    }
}

/// The answer of one long poll: the notifications after the cursor, and the cursor to resume from.
public struct NotificationPage: Sendable, Equatable {
    public var notifications: [PushNotification]
    public var cursor: String?

    public init(notifications: [PushNotification], cursor: String?) {
        self.notifications = notifications
        self.cursor = cursor
    }
}

extension RecordClient {
    /// The longest long poll the server allows, in seconds.
    public static let maximumPollTimeout = 60

    /// `tokens/create`: a new notification channel for this device.
    public func createNotificationChannel() async throws -> NotificationChannel {
        let answer = try await perform(method: "POST", url: endpoint.environmentURL("tokens/create"),
                                       body: ["apnsEnvironment": "development"])
        guard let token = answer["apnsToken"]?.stringValue, let courier = answer["webcourierURL"]?.stringValue else {
            throw RecordClientError.invalidResponse("tokens/create answer without apnsToken and webcourierURL")
        }
        return NotificationChannel(apnsToken: token, webcourierURL: courier)
    }

    /// Long-polls the channel: returns as soon as a notification newer than `since` exists, or
    /// with an empty page after `timeout` seconds.
    public func pollNotifications(_ channel: NotificationChannel, since cursor: String?, timeout: Int) async throws -> NotificationPage {
        let seconds = max(0, min(timeout, Self.maximumPollTimeout))
        guard let base = URL(string: channel.webcourierURL, relativeTo: endpoint.baseURL),
              var components = URLComponents(url: base.absoluteURL, resolvingAgainstBaseURL: true)
        else { throw RecordClientError.invalidResponse("webcourierURL '\(channel.webcourierURL)' is not a URL") }
        var items = (components.queryItems ?? []).filter { $0.name != "since" && $0.name != "timeout" }
        // Always a `since` (empty: from the channel's start): a poll without one is answered
        // one bare notification at a time, the form CloudKit JS reads, without a cursor.
        items.append(URLQueryItem(name: "since", value: cursor ?? ""))
        items.append(URLQueryItem(name: "timeout", value: String(seconds)))
        components.queryItems = items
        // `+` is legal in a query but read as a space by some servers; cursors may be base64.
        components.percentEncodedQuery = components.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        guard let url = components.url else { throw RecordClientError.invalidResponse("cannot build the poll URL") }
        let answer = try await perform(method: "GET", url: url, body: nil, timeout: TimeInterval(seconds + 15))
        let notifications = (answer["notifications"]?.arrayValue ?? []).compactMap(PushNotification.init(json:))
        return NotificationPage(notifications: notifications, cursor: answer["cursor"]?.stringValue ?? cursor)
    }
}
