/// The schemas compiled into the binaries, so that the daemon needs no file on disk to enforce them.
public enum BuiltinSchema {
    /// The text of `Schemas/scorebook.ckdb`, verbatim: the Scorebook record types in
    /// CloudKit schema language. A test asserts that this constant and the file are identical, so
    /// edit the file and paste it here (indented by four spaces) whenever either changes.
    public static let scorebookSource: String = """
    // Scorebook Sync: the Scorebook record types, in CloudKit schema language.
    //
    // All records live in the custom zone "ScorebookData" of the private database, except CatalogGame:
    // the public game catalogue, in the _defaultZone of the public database. Record names are
    // "<RecordType>|~|<UUID>" with the UUID in upper case. References are made from the child side
    // and are saved with action DELETE_SELF; the schema language has no syntax for a reference's
    // target type, so it is noted in a comment beside each REFERENCE field.
    //
    // Fields whose names start with "___" are CloudKit's system fields: they are implicit on every
    // record and are listed here only so that this file matches what CloudKit exports.

    DEFINE SCHEMA

        RECORD TYPE Person (
            "___createTime" TIMESTAMP SORTABLE,
            "___createdBy"  REFERENCE,
            "___etag"       STRING,
            "___modTime"    TIMESTAMP SORTABLE,
            "___modifiedBy" REFERENCE,
            "___recordID"   REFERENCE QUERYABLE,
            firstName        STRING QUERYABLE SORTABLE SEARCHABLE,
            lastName         STRING QUERYABLE SORTABLE SEARCHABLE,
            emailAddress     STRING QUERYABLE,
            avatar           ASSET,
            modificationDate TIMESTAMP QUERYABLE SORTABLE,
            GRANT WRITE TO "_creator",
            GRANT CREATE TO "_icloud",
            GRANT READ TO "_world"
        );

        RECORD TYPE Game (
            "___createTime" TIMESTAMP SORTABLE,
            "___createdBy"  REFERENCE,
            "___etag"       STRING,
            "___modTime"    TIMESTAMP SORTABLE,
            "___modifiedBy" REFERENCE,
            "___recordID"   REFERENCE QUERYABLE,
            name             STRING QUERYABLE SORTABLE SEARCHABLE,
            lowScoreWins     INT64 QUERYABLE,
            modificationDate TIMESTAMP QUERYABLE SORTABLE,
            GRANT WRITE TO "_creator",
            GRANT CREATE TO "_icloud",
            GRANT READ TO "_world"
        );

        RECORD TYPE CatalogGame (
            "___createTime" TIMESTAMP SORTABLE,
            "___createdBy"  REFERENCE,
            "___etag"       STRING,
            "___modTime"    TIMESTAMP SORTABLE,
            "___modifiedBy" REFERENCE,
            "___recordID"   REFERENCE QUERYABLE,
            name             STRING QUERYABLE SORTABLE SEARCHABLE,
            lowScoreWins     INT64 QUERYABLE,
            description      STRING,
            modificationDate TIMESTAMP QUERYABLE SORTABLE,
            GRANT WRITE TO "_creator",
            GRANT CREATE TO "_icloud",
            GRANT READ TO "_world"
        );

        RECORD TYPE Match (
            "___createTime" TIMESTAMP SORTABLE,
            "___createdBy"  REFERENCE,
            "___etag"       STRING,
            "___modTime"    TIMESTAMP SORTABLE,
            "___modifiedBy" REFERENCE,
            "___recordID"   REFERENCE QUERYABLE,
            game             REFERENCE QUERYABLE,             -- -> Game, DELETE_SELF
            startDate        TIMESTAMP QUERYABLE SORTABLE,
            endDate          TIMESTAMP QUERYABLE SORTABLE,
            notes            STRING SEARCHABLE,
            modificationDate TIMESTAMP QUERYABLE SORTABLE,
            GRANT WRITE TO "_creator",
            GRANT CREATE TO "_icloud",
            GRANT READ TO "_world"
        );

        RECORD TYPE Player (
            "___createTime" TIMESTAMP SORTABLE,
            "___createdBy"  REFERENCE,
            "___etag"       STRING,
            "___modTime"    TIMESTAMP SORTABLE,
            "___modifiedBy" REFERENCE,
            "___recordID"   REFERENCE QUERYABLE,
            match            REFERENCE QUERYABLE,             -- -> Match, DELETE_SELF
            person           REFERENCE QUERYABLE,             -- -> Person, DELETE_SELF
            seat             INT64 QUERYABLE SORTABLE,
            modificationDate TIMESTAMP QUERYABLE SORTABLE,
            GRANT WRITE TO "_creator",
            GRANT CREATE TO "_icloud",
            GRANT READ TO "_world"
        );

        RECORD TYPE Score (
            "___createTime" TIMESTAMP SORTABLE,
            "___createdBy"  REFERENCE,
            "___etag"       STRING,
            "___modTime"    TIMESTAMP SORTABLE,
            "___modifiedBy" REFERENCE,
            "___recordID"   REFERENCE QUERYABLE,
            player           REFERENCE QUERYABLE,             -- -> Player, DELETE_SELF
            value            DOUBLE QUERYABLE SORTABLE,
            round            INT64 QUERYABLE SORTABLE,
            modificationDate TIMESTAMP QUERYABLE SORTABLE,
            GRANT WRITE TO "_creator",
            GRANT CREATE TO "_icloud",
            GRANT READ TO "_world"
        );

        RECORD TYPE MatchImage (
            "___createTime" TIMESTAMP SORTABLE,
            "___createdBy"  REFERENCE,
            "___etag"       STRING,
            "___modTime"    TIMESTAMP SORTABLE,
            "___modifiedBy" REFERENCE,
            "___recordID"   REFERENCE QUERYABLE,
            match            REFERENCE QUERYABLE,             -- -> Match, DELETE_SELF
            image            ASSET,
            modificationDate TIMESTAMP QUERYABLE SORTABLE,
            GRANT WRITE TO "_creator",
            GRANT CREATE TO "_icloud",
            GRANT READ TO "_world"
        );

        RECORD TYPE MatchLocation (
            "___createTime" TIMESTAMP SORTABLE,
            "___createdBy"  REFERENCE,
            "___etag"       STRING,
            "___modTime"    TIMESTAMP SORTABLE,
            "___modifiedBy" REFERENCE,
            "___recordID"   REFERENCE QUERYABLE,
            match            REFERENCE QUERYABLE,             -- -> Match, DELETE_SELF
            name             STRING QUERYABLE SORTABLE SEARCHABLE,
            location         LOCATION QUERYABLE,
            modificationDate TIMESTAMP QUERYABLE SORTABLE,
            GRANT WRITE TO "_creator",
            GRANT CREATE TO "_icloud",
            GRANT READ TO "_world"
        );

    """

    /// `scorebookSource`, parsed. The shipped text always parses (a test checks it).
    public static let scorebook: Schema = {
        do {
            return try Schema.parse(scorebookSource)
        } catch {
            preconditionFailure("the built-in Scorebook schema does not parse: \(error)")
        }
    }()
}
