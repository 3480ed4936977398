//! Many machines, one memory (issue 32): two `clix mcp --http` replicas,
//! each with its own `CLIX_HOME`, on one PostgreSQL store and one hub
//! folder, behind a real nginx, driven by the official Python MCP client
//! (tests/replicas/driver.py, one scenario per test).
//!
//! nginx routes by the replica's name at the end of the session id
//! (`--route r1` → ids ending `.r1`), the way docs/scale-out.md tells
//! operators to: a `map` from the id's suffix to an upstream of that
//! replica with the other as its backup, and a pool for new sessions.
//! Hashing the header alone cannot work (the id is made by whichever
//! replica answered `initialize`, and hashes anywhere).
//!
//! Skipped with a message when the Python SDK, nginx or PostgreSQL is
//! missing, except under CI (`CI` set), where `.ci/run` installs them.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use clix_testkit::{Nginx, Postgres, nginx, postgres, skip_missing};
use common::mcp_http::{HttpServer, TOKEN};
use common::text;

/// The replicas' `--route` names.
const ROUTES: [&str; 2] = ["r1", "r2"];

/// A hub tool limited to 5 calls a minute that leaves one line in the
/// workspace's executions.log per real run.
const TICK: &str = "#!/bin/sh\necho \"ran $$\" >> executions.log\necho '{\"ran\": true}'\n";
const TICK_MANIFEST: &str = r#"{"name": "tick", "version": "1", "description": "counts its runs", "command": "./run",
  "self_test": false, "version_args": false, "rate_limit": 5}"#;

fn driver() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/replicas/driver.py")
}

/// Whether the test can run; if not, it is skipped saying what to install.
fn can_run(test: &str) -> bool {
    let sdk = Command::new("python3")
        .args([
            "-c",
            "import httpx2; from mcp import Client; from mcp.client.streamable_http import streamable_http_client",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    let missing = if !sdk {
        Some("the Python MCP SDK is not installed (`pip install 'mcp>=2,<3'`)")
    } else if nginx::binary().is_none() {
        Some(nginx::MISSING)
    } else if postgres::pgserver_dir().is_none() {
        Some(postgres::MISSING)
    } else {
        None
    };
    if let Some(why) = missing {
        skip_missing(test, why);
    }
    missing.is_none()
}

/// The replicas, their store and hub, and nginx in front.
struct Cluster {
    /// The workspace both replicas serve (the same project on each machine).
    ws: tempfile::TempDir,
    _hub: tempfile::TempDir,
    _homes: Vec<tempfile::TempDir>,
    /// `None` once killed.
    replicas: Vec<Option<HttpServer>>,
    /// Each replica's `127.0.0.1:PORT`.
    addrs: Vec<String>,
    nginx: Nginx,
}

impl Cluster {
    /// Migrates the store at `url`, starts both replicas on it and nginx.
    fn start(url: &str) -> Cluster {
        let ws = tempfile::tempdir().unwrap();
        let hub = tempfile::tempdir().unwrap();
        let tool = hub.path().join("tick");
        std::fs::create_dir(&tool).unwrap();
        std::fs::write(tool.join("run"), TICK).unwrap();
        std::fs::set_permissions(tool.join("run"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        std::fs::write(tool.join("manifest.json"), TICK_MANIFEST).unwrap();

        let admin = tempfile::tempdir().unwrap();
        let o = common::clix(admin.path(), ws.path(), &["storage", "migrate"])
            .env("CLIX_STORAGE_URL", url)
            .output()
            .unwrap();
        assert!(o.status.success(), "clix storage migrate: {}", text(&o.stderr));

        let mut homes = vec![admin];
        let mut replicas = Vec::new();
        let mut addrs = Vec::new();
        for route in ROUTES {
            let home = tempfile::tempdir().unwrap();
            let mut cmd = common::clix(home.path(), ws.path(), &["mcp", "--http", "127.0.0.1:0", "--route", route]);
            cmd.env("CLIX_STORAGE_URL", url).env("CLIX_HUB_PATH", hub.path());
            // SAFETY: prctl is async-signal-safe and only touches the child:
            // a replica dies with the test's thread, even a killed one.
            unsafe {
                cmd.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    Ok(())
                });
            }
            let server = HttpServer::start(&mut cmd);
            let addr = server.url.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
            addrs.push(addr);
            replicas.push(Some(server));
            homes.push(home);
        }
        let port = clix_testkit::free_port();
        let upstreams: Vec<&str> = addrs.iter().map(String::as_str).collect();
        let nginx = Nginx::start(port, &clix_testkit::nginx::replicas_config(port, &upstreams, None));
        Cluster { ws, _hub: hub, _homes: homes, replicas, addrs, nginx }
    }

    /// SIGKILL to replica `route`, and waits until it is gone.
    fn kill(&mut self, route: &str) {
        let i = ROUTES.iter().position(|r| *r == route).unwrap_or_else(|| panic!("no replica {route}"));
        let mut server = self.replicas[i].take().unwrap_or_else(|| panic!("{route} was killed already"));
        server.child.kill().unwrap();
        server.child.wait().unwrap();
    }

    /// Runs the driver's `scenario`, doing what it asks on the way (see
    /// driver.py); panics with everything it said unless it passed.
    fn drive(&mut self, scenario: &str, store: &Postgres) -> String {
        let mut child = Command::new("python3")
            .arg(driver())
            .arg(scenario)
            .arg("--url")
            .arg(self.nginx.url("/mcp"))
            .arg("--workspace")
            .arg(self.ws.path())
            .env("CLIX_MCP_TOKEN", TOKEN)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut stderr = child.stderr.take().unwrap();
        let errors = std::thread::spawn(move || {
            let mut all = String::new();
            let _ = stderr.read_to_string(&mut all);
            all
        });
        let mut stdin = child.stdin.take().unwrap();
        let mut said = String::new();
        for line in BufReader::new(child.stdout.take().unwrap()).lines() {
            let line = line.unwrap();
            println!("{line}");
            match line.as_str() {
                "@kill r1" => self.kill("r1"),
                "@stop-store" => store.stop(),
                "@start-store" => store.start_again(),
                other if other.starts_with('@') => panic!("the driver asked for {other}"),
                _ => {
                    said.push_str(&line);
                    said.push('\n');
                    continue;
                }
            }
            writeln!(stdin, "ok").unwrap();
        }
        let status = child.wait().unwrap();
        let errors = errors.join().unwrap();
        assert!(
            status.success(),
            "scenario {scenario} failed:\n{said}\n--- driver's stderr:\n{errors}\n--- nginx:\n{}",
            self.nginx.access_log()
        );
        said
    }

    /// nginx's access log as (status, upstream addresses, session id).
    fn requests(&self) -> Vec<(String, String, String)> {
        let log = self.nginx.access_log();
        log.lines()
            .filter_map(|line| {
                let (head, sid) = line.split_once(" sid=")?;
                let mut words = head.splitn(3, ' ');
                let (_method, status, upstream) = (words.next()?, words.next()?, words.next()?);
                Some((status.to_string(), upstream.to_string(), sid.to_string()))
            })
            .collect()
    }
}

#[test]
fn a_memory_stored_on_one_replica_is_found_on_the_other() {
    let test = "a_memory_stored_on_one_replica_is_found_on_the_other";
    if !can_run(test) {
        return;
    }
    let pg = Postgres::shared().expect(postgres::MISSING);
    let mut cluster = Cluster::start(&pg.database());
    cluster.drive("memory", pg);
    // Every request that carried a session id went to the replica it names.
    let requests = cluster.requests();
    for (route, addr) in ROUTES.iter().zip(&cluster.addrs) {
        let routed: Vec<_> = requests.iter().filter(|(_, _, sid)| sid.ends_with(&format!(".{route}"))).collect();
        assert!(!routed.is_empty(), "no request for {route}");
        for (status, upstream, sid) in routed {
            assert_eq!(upstream, addr, "{sid} ({status}) went to {upstream}, not {route} at {addr}");
            assert_ne!(status, "404", "{sid}");
        }
    }
}

#[test]
fn a_rate_limit_holds_across_replicas() {
    let test = "a_rate_limit_holds_across_replicas";
    if !can_run(test) {
        return;
    }
    if clix_testkit::which("bwrap").is_none() {
        return skip_missing(test, "bubblewrap is not installed (hub tools run in it): apt-get install bubblewrap");
    }
    let pg = Postgres::shared().expect(postgres::MISSING);
    let mut cluster = Cluster::start(&pg.database());
    cluster.drive("rate-limit", pg);
}

#[test]
fn a_killed_replica_loses_no_acknowledged_memory_and_its_clients_start_again() {
    let test = "a_killed_replica_loses_no_acknowledged_memory_and_its_clients_start_again";
    if !can_run(test) {
        return;
    }
    let pg = Postgres::shared().expect(postgres::MISSING);
    let mut cluster = Cluster::start(&pg.database());
    cluster.drive("kill", pg);
    // The dead replica's session id was answered by the other replica: nginx
    // tried r1 first (both addresses logged), or had already marked it down
    // after the call that failed with it (only r2's).
    let requests = cluster.requests();
    assert!(
        requests.iter().any(|(status, upstream, sid)| status == "404"
            && sid.ends_with(".r1")
            && upstream.ends_with(&cluster.addrs[1])),
        "no 404 from r2 for an r1 session after the kill:\n{}",
        cluster.nginx.access_log()
    );
}

#[test]
fn a_store_restarted_under_load_fails_clearly_then_works_and_loses_nothing() {
    let test = "a_store_restarted_under_load_fails_clearly_then_works_and_loses_nothing";
    if !can_run(test) {
        return;
    }
    // A server of its own: the others' must stay up.
    let pg = Postgres::start();
    let mut cluster = Cluster::start(&pg.database());
    cluster.drive("store-restart", &pg);
}
