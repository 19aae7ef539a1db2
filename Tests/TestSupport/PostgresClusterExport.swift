// The throw-away PostgreSQL cluster lives in its own module so that scorebook-bench shares it;
// tests keep reaching it through TestSupport.
@_exported import PostgresCluster
