//! Two machines' hubs on one shared store (a real PostgreSQL): each has its
//! own state folder, as replicas do, so only the store can make a rate
//! limit, a `serialize` lock and `hub stats` hold across them. Tools run in
//! real bubblewrap.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod support;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clix_hub::{HubConfig, HubRuntime, HubSource, LoadOptions};
use clix_postgres::SharedStore;
use clix_sandbox::{AuditLog, Sandbox, SandboxSettings};
use clix_testkit::Postgres;
use clix_workspace::Workspace;
use serde_json::{Map, json};

/// A workspace and a hub folder both machines see, and the shared store.
struct Cluster {
    dirs: Vec<tempfile::TempDir>,
    store: Option<Arc<SharedStore>>,
}

impl Cluster {
    fn new(shared: bool) -> Option<Cluster> {
        let store = if shared {
            let pg = Postgres::for_test("clix-hub shared")?;
            let url = pg.database();
            SharedStore::migrate(&url).unwrap();
            Some(Arc::new(SharedStore::connect(&url).unwrap()))
        } else {
            None
        };
        let dirs = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
        Some(Cluster { dirs, store })
    }

    fn ws(&self) -> PathBuf {
        std::fs::canonicalize(self.dirs[0].path()).unwrap()
    }

    fn hub(&self) -> PathBuf {
        std::fs::canonicalize(self.dirs[1].path()).unwrap()
    }

    fn tool(&self, name: &str, patch: serde_json::Value, script: &str) {
        support::write_tool(&self.hub(), name, patch, script);
    }

    /// One machine: its own state folder (kept in `state`) and audit file.
    async fn machine(&self, state: &tempfile::TempDir) -> HubRuntime {
        let mut audit = AuditLog::new(state.path().join("audit.jsonl"));
        if let Some(store) = &self.store {
            audit = audit.shared(store.clone());
        }
        let config = HubConfig {
            sources: vec![HubSource::explicit(self.hub())],
            load: LoadOptions::default(),
            domains: Vec::new(),
            state_dir: state.path().to_path_buf(),
            self_test_ttl: Duration::from_secs(600),
            env: Arc::new(|_| None),
            audit_log: Some(audit.clone()),
            shared: self.store.clone(),
            session: "shared-test".into(),
        };
        let sandbox = Sandbox::new(SandboxSettings::default(), &self.ws(), None, Some(audit), "shared-test".into());
        let workspace = Workspace::open(&self.ws()).unwrap();
        HubRuntime::load(config, Some(Arc::new(sandbox)), Some(&workspace)).await
    }
}

async fn call(hub: &HubRuntime, ws: &std::path::Path, tool: &str) -> i32 {
    hub.call(tool, &Map::new(), None, ws, Duration::from_secs(60)).await.exit_code
}

#[tokio::test]
async fn a_rate_limit_and_the_stats_count_every_machine_s_calls() {
    let Some(cluster) = Cluster::new(true) else { return };
    let runs = cluster.ws().join("runs");
    cluster.tool("limited", json!({"rate_limit": 3}), &format!("echo run >> {}; echo '{{}}'", runs.display()));
    let (state_a, state_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (cluster.machine(&state_a).await, cluster.machine(&state_b).await);
    let ws = cluster.ws();
    let calls = (0..4).flat_map(|_| [call(&a, &ws, "limited"), call(&b, &ws, "limited")]);
    let codes = futures_util::future::join_all(calls).await;
    assert_eq!(codes.iter().filter(|&&c| c == 0).count(), 3, "{codes:?}");
    assert_eq!(codes.iter().filter(|&&c| c == 75).count(), 5, "the rest are told to retry: {codes:?}");
    assert_eq!(std::fs::read_to_string(&runs).unwrap().lines().count(), 3, "the tool ran 3 times");
    // Either machine's stats read the shared audit: all 8 calls.
    for hub in [&a, &b] {
        let stats = hub.stats(Some("limited")).unwrap();
        assert_eq!((stats[0].calls, stats[0].ok), (8, 3), "{stats:?}");
        assert_eq!(stats[0].errors.get("RATE_LIMITED"), Some(&5), "{stats:?}");
    }
    // Each machine's own file still has its own lines.
    let lines = |s: &tempfile::TempDir| std::fs::read_to_string(s.path().join("audit.jsonl")).unwrap().lines().count();
    assert_eq!((lines(&state_a), lines(&state_b)), (4, 4), "each call's line is in its own machine's file too");
}

/// Whether two calls of a tool, one per machine, overlapped. Each waits for
/// the other to have started (up to `partner_secs`) before it ends.
async fn calls_overlap(shared: bool, partner_secs: u32) -> Option<bool> {
    let cluster = Cluster::new(shared)?;
    let log = cluster.ws().join("spans");
    let script = format!(
        "echo \"start\" >> {0}; i=0; \
         while [ \"$(grep -c start {0})\" -lt 2 ] && [ $i -lt {1} ]; do sleep 0.05; i=$((i+1)); done; \
         echo \"end\" >> {0}; echo '{{}}'",
        log.display(),
        partner_secs * 20
    );
    cluster.tool("single", json!({"serialize": true}), &script);
    let (state_a, state_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (cluster.machine(&state_a).await, cluster.machine(&state_b).await);
    let ws = cluster.ws();
    let (x, y) = tokio::join!(call(&a, &ws, "single"), call(&b, &ws, "single"));
    assert_eq!((x, y), (0, 0));
    let events: Vec<String> = std::fs::read_to_string(&log).unwrap().lines().map(String::from).collect();
    Some(events != ["start", "end", "start", "end"])
}

#[tokio::test]
async fn serialize_holds_across_machines_only_with_the_shared_store() {
    let Some(overlapped) = calls_overlap(true, 2).await else { return };
    assert!(!overlapped, "with the shared store, the second machine's call waits for the first");
    // Each machine's own lock files do not see the other's calls.
    assert_eq!(calls_overlap(false, 20).await, Some(true), "without it, the calls overlap");
}
