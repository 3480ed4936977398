//! A real nginx for the tests, no containers: Debian's (`nginx-light` is
//! enough), in the foreground (`daemon off`) with its prefix, pid file,
//! logs and temporary folders all in a temporary folder, so it needs no
//! `/etc/nginx`, `/var/log/nginx` or `/run`. The test writes what goes
//! inside `http { }`; the launcher adds the rest around it.
//!
//! Nothing outlives the tests: a watchdog process waits on a pipe from the
//! test process and, once that closes (the process ended, even by
//! SIGKILL), stops nginx and removes the folder. A dropped [`Nginx`] stops
//! at once.

#![allow(clippy::expect_used)] // a harness that cannot start nginx has failed its caller; each expect says what failed

use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// Why the tests cannot have nginx, with the command that fixes it.
pub const MISSING: &str = "nginx is not installed: `apt-get install nginx-light`";

/// Each request's line in [`Nginx::access_log`]: method, status, the
/// replica that answered (`$upstream_addr`: several, comma-separated, when
/// nginx tried the next one) and the `Mcp-Session-Id` it carried.
const LOG_FORMAT: &str = "'$request_method $status $upstream_addr sid=$http_mcp_session_id'";

/// The nginx program: Debian's `/usr/sbin/nginx` (not on a user's PATH),
/// else one on PATH.
pub fn binary() -> Option<PathBuf> {
    let debian = Path::new("/usr/sbin/nginx");
    if debian.is_file() {
        return Some(debian.to_path_buf());
    }
    crate::which("nginx")
}

/// A running nginx, stopped when dropped.
pub struct Nginx {
    dir: tempfile::TempDir,
    port: u16,
    child: Child,
    /// The watchdog and the pipe it waits on (closed: stop and clean up).
    watchdog: Option<(Child, ChildStdin)>,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM: a fast shutdown, the workers with it.
        // SAFETY: kill has no memory preconditions; the pid is our child's, not yet reaped.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let _ = self.child.wait();
        if let Some((mut watchdog, pipe)) = self.watchdog.take() {
            drop(pipe);
            let _ = watchdog.wait();
        }
    }
}

impl Nginx {
    /// Starts nginx with `http` as the inside of its `http { }` block (its
    /// `upstream`s, `map`s and a `server` that listens on 127.0.0.1:`port`)
    /// and returns once it accepts connections there. Panics with nginx's
    /// error log when it does not start (see [`binary`] and [`MISSING`]).
    pub fn start(port: u16, http: &str) -> Nginx {
        let program = binary().expect(MISSING);
        let dir = tempfile::Builder::new().prefix("clix-nginx-").tempdir().expect("a temporary folder for nginx");
        let p = dir.path();
        std::fs::create_dir(p.join("tmp")).expect("nginx's temporary folder");
        // As root nginx would switch its workers to `nobody`, who cannot
        // enter this folder; they stay root, like the tests.
        // SAFETY: geteuid has no preconditions and cannot fail.
        let user = if unsafe { libc::geteuid() } == 0 { "user root;\n" } else { "" };
        let temp_paths: String = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"]
            .iter()
            .map(|kind| format!("    {kind}_temp_path {};\n", p.join("tmp").join(kind).display()))
            .collect();
        let config = format!(
            "daemon off;\n{user}worker_processes 1;\npid {dir}/nginx.pid;\nerror_log {dir}/error.log info;\n\
             events {{ worker_connections 1024; }}\n\
             http {{\n    log_format clix {LOG_FORMAT};\n    access_log {dir}/access.log clix;\n{temp_paths}\n{http}\n}}\n",
            dir = p.display()
        );
        std::fs::write(p.join("nginx.conf"), config).expect("nginx.conf");
        let child = Command::new(&program)
            .arg("-p")
            .arg(p)
            .arg("-c")
            .arg(p.join("nginx.conf"))
            // Errors before the config is read go here, not to /var/log/nginx.
            .arg("-e")
            .arg(p.join("error.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx runs (apt-get install nginx-light)");
        let mut server = Nginx { dir, port, child, watchdog: None };
        server.watch();
        // A safety net for a busy machine: the wait ends once it listens.
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("nginx exited ({status}) before listening on {port}:\n{}", server.error_log());
            }
            assert!(Instant::now() < deadline, "nginx did not listen on {port}:\n{}", server.error_log());
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }

    /// Starts the watchdog that stops nginx and removes its folder once
    /// this process is gone.
    fn watch(&mut self) {
        let script = "cat >/dev/null; kill -TERM \"$1\" 2>/dev/null; \
                      while kill -0 \"$1\" 2>/dev/null; do sleep 0.05; done; rm -rf \"$2\"";
        let mut child = std::os::unix::process::CommandExt::process_group(
            Command::new("sh")
                .arg("-c")
                .arg(script)
                .arg("watchdog")
                .arg(self.child.id().to_string())
                .arg(self.dir.path()),
            // Its own process group: a Ctrl-C meant for the tests must not
            // end it before it has cleaned up.
            0,
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("sh runs");
        let pipe = child.stdin.take().expect("the watchdog's pipe");
        self.watchdog = Some((child, pipe));
    }

    /// Its port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The requests so far, one a line (see [`LOG_FORMAT`]).
    pub fn access_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("access.log")).unwrap_or_default()
    }

    /// What nginx said about itself (start, errors, failed upstreams).
    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }
}

/// docs/scale-out.md's configuration for `replicas` (addresses of the
/// replicas started with `--route r1`, `r2`, … in order), listening on
/// 127.0.0.1:`port`: a session id's suffix picks its replica's upstream
/// (the others as backups, which answer 404 for a session they never
/// issued: the MCP signal to start a new one), new sessions go round the
/// pool; one replica needs no map. With `keepalive`, each upstream keeps
/// that many idle connections to its replicas.
pub fn replicas_config(port: u16, replicas: &[&str], keepalive: Option<u32>) -> String {
    let keep = keepalive.map(|n| format!(" keepalive {n};")).unwrap_or_default();
    let pool: String = replicas.iter().map(|a| format!(" server {a} max_fails=1 fail_timeout=30s;")).collect();
    let mut upstreams = format!("    upstream clix_pool {{{pool}{keep} }}\n");
    let mut map = String::new();
    if replicas.len() > 1 {
        for (i, own) in replicas.iter().enumerate() {
            let backups: String =
                replicas.iter().filter(|a| *a != own).map(|a| format!(" server {a} backup;")).collect();
            let r = i + 1;
            upstreams.push_str(&format!(
                "    upstream clix_r{r} {{ server {own} max_fails=1 fail_timeout=30s;{backups}{keep} }}\n"
            ));
            map.push_str(&format!("        ~\\.r{r}$ clix_r{r};\n"));
        }
    }
    format!(
        r#"
{upstreams}    map $http_mcp_session_id $clix_backend {{
{map}        default clix_pool;
    }}
    server {{
        listen 127.0.0.1:{port};
        location /mcp {{
            proxy_pass http://$clix_backend;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_buffering off;
            proxy_read_timeout 1h;
            proxy_connect_timeout 2s;
        }}
    }}
"#
    )
}
