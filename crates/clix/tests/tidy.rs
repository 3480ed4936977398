//! Tidy: the crate graph of ARCHITECTURE.md, enforced. Data flows one way
//! (bin → agent/mcp → engine → shell + present, with sandbox, hub and
//! memory beside them); each row below is a crate and the clix crates it may
//! depend on, everything else being its "must not". `cargo metadata` says
//! what the crates really depend on.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

/// Each workspace crate and the clix crates it may use (normal dependencies).
const MAY_DEPEND_ON: &[(&str, &[&str])] = &[
    ("clix-common", &[]),
    ("clix-config", &["clix-common"]),
    ("clix-present", &["clix-common"]),
    ("clix-memory", &["clix-common"]),
    ("clix-workspace", &["clix-config"]),
    ("clix-shell", &["clix-common", "clix-workspace"]),
    // Pure rules: it decides, the shell's hook and the engine apply.
    ("clix-policy", &[]),
    // The audit log's envelope, writer and redaction: beneath every crate that writes a line.
    ("clix-audit", &["clix-common"]),
    // One child process, supervised (stdin, capture, time limit, teardown): under the sandbox and clip.
    ("clix-process", &["clix-common"]),
    ("clix-sandbox", &["clix-audit", "clix-common", "clix-process", "clix-workspace"]),
    ("clix-hub", &["clix-audit", "clix-common", "clix-sandbox", "clix-workspace"]),
    // The browser: Chromium started through the sandbox, driven over CDP; it prints nothing.
    ("clix-browser", &["clix-sandbox"]),
    // Other machines as commands: host children (ssh, docker, kubectl), the local kind through the sandbox.
    ("clix-clip", &["clix-audit", "clix-common", "clix-process", "clix-sandbox", "clix-workspace"]),
    (
        "clix-engine",
        &[
            "clix-audit",
            "clix-browser",
            "clix-clip",
            "clix-common",
            "clix-hub",
            "clix-memory",
            "clix-policy",
            "clix-present",
            "clix-sandbox",
            "clix-shell",
            "clix-workspace",
        ],
    ),
    ("clix-agent", &["clix-common", "clix-config", "clix-engine", "clix-memory", "clix-workspace"]),
    ("clix-mcp", &["clix-common", "clix-engine"]),
    // Plans of agents: over the agent's stream and tools, the engine's namespaces.
    ("clix-plan", &["clix-agent", "clix-common", "clix-engine", "clix-workspace"]),
    // The composition root: settings, and every session assembled once.
    (
        "clix-session",
        &[
            "clix-agent",
            "clix-browser",
            "clix-clip",
            "clix-common",
            "clix-config",
            "clix-engine",
            "clix-hub",
            "clix-memory",
            "clix-plan",
            "clix-policy",
        ],
    ),
    // The binary: clap and rendering over the session.
    (
        "clix",
        &[
            "clix-agent",
            "clix-common",
            "clix-config",
            "clix-engine",
            "clix-eval",
            "clix-mcp",
            "clix-memory",
            "clix-plan",
            "clix-policy",
            "clix-session",
        ],
    ),
    // The eval harness.
    (
        "clix-eval",
        &["clix-agent", "clix-common", "clix-config", "clix-engine", "clix-sandbox", "clix-session", "clix-workspace"],
    ),
    // Test support, a dev-dependency only (and the unshipped bench's): no
    // shipped crate may need it to build.
    ("clix-testkit", &[]),
    // Not shipped: it measures the others side by side (with the tests' sshd).
    (
        "clix-bench",
        &[
            "clix-agent",
            "clix-browser",
            "clix-clip",
            "clix-config",
            "clix-engine",
            "clix-hub",
            "clix-memory",
            "clix-plan",
            "clix-policy",
            "clix-present",
            "clix-sandbox",
            "clix-session",
            "clix-shell",
            "clix-testkit",
            "clix-workspace",
        ],
    ),
];

/// Every workspace crate and its normal dependencies on other clix crates.
fn actual_graph() -> BTreeMap<String, BTreeSet<String>> {
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&out.stderr));
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let packages = metadata["packages"].as_array().expect("packages");
    let members: BTreeSet<String> = packages.iter().filter_map(|p| p["name"].as_str()).map(String::from).collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|d| d["kind"].is_null())
                .filter_map(|d| d["name"].as_str())
                .filter(|name| members.contains(*name))
                .map(String::from)
                .collect();
            (p["name"].as_str().unwrap_or_default().to_string(), deps)
        })
        .collect()
}

#[test]
fn no_crate_depends_on_one_it_must_not() {
    let table: BTreeMap<&str, &[&str]> = MAY_DEPEND_ON.iter().copied().collect();
    let mut wrong = Vec::new();
    for (krate, deps) in actual_graph() {
        let Some(allowed) = table.get(krate.as_str()) else {
            wrong.push(format!("{krate} is not in the table: add its row here and in ARCHITECTURE.md"));
            continue;
        };
        for dep in deps.iter().filter(|d| !allowed.contains(&d.as_str())) {
            wrong.push(format!("{krate} depends on {dep}, which ARCHITECTURE.md says it must not"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Each package of a `cargo tree` and the feature sets it is built with (one
/// for the target and one for build scripts and proc macros, if they differ).
fn resolved_features(selection: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let out = Command::new(env!("CARGO"))
        .arg("tree")
        .args(selection)
        .args(["--prefix", "none", "--format", "{p}|{f}", "--locked", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(out.status.success(), "cargo tree: {}", String::from_utf8_lossy(&out.stderr));
    let mut features: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (package, set) in
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|line| line.trim_end_matches(" (*)").split_once('|'))
    {
        features.entry(package.to_string()).or_default().insert(set.to_string());
    }
    features
}

/// The README's first command builds `-p clix`; `.ci/run` then tests the
/// workspace. A shared dependency resolved with other features in the second
/// build is compiled again, with everything above it (a test-only feature on
/// libc once rebuilt ~445 crates), so each must resolve alike in both.
#[test]
fn the_binary_and_the_tests_build_every_shared_crate_alike() {
    let binary = resolved_features(&["-p", "clix", "--edges", "normal,build"]);
    let tests = resolved_features(&["--workspace"]);
    let differ: Vec<String> = binary
        .iter()
        .filter_map(|(package, features)| {
            let in_tests = tests.get(package)?;
            (in_tests != features).then(|| format!("{package}: binary {features:?}, tests {in_tests:?}"))
        })
        .collect();
    assert!(
        differ.is_empty(),
        "these crates would be compiled twice; give the workspace dependency the tests' features:\n{}",
        differ.join("\n")
    );
}

#[test]
fn every_crate_is_on_the_architecture_map() {
    let map = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../ARCHITECTURE.md")).expect("the map");
    for (krate, _) in MAY_DEPEND_ON {
        assert!(map.contains(&format!("`{krate}`")), "ARCHITECTURE.md has no row for `{krate}`");
    }
    let members = actual_graph();
    for (krate, _) in MAY_DEPEND_ON {
        assert!(members.contains_key(*krate), "{krate} is in the table but not in the workspace");
    }
}

/// The library crates print nothing: they emit `tracing` events, and the
/// binary's one subscriber decides where those go (stderr; stdout carries
/// results, and MCP under `clix mcp`).
#[test]
fn library_crates_print_nothing() {
    const PRINTS: &[&str] = &["println!", "print!(", "eprintln!", "eprint!(", "dbg!(", "io::stdout()", "io::stderr()"];
    let crates = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let mut found = Vec::new();
    for (krate, _) in MAY_DEPEND_ON.iter().filter(|(k, _)| !["clix", "clix-bench", "clix-testkit"].contains(k)) {
        let mut dirs = vec![std::path::Path::new(crates).join(krate).join("src")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let source = std::fs::read_to_string(&path).unwrap_or_default();
                    for (n, line) in source.lines().enumerate() {
                        if !line.trim_start().starts_with("//") && PRINTS.iter().any(|p| line.contains(p)) {
                            found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                        }
                    }
                }
            }
        }
    }
    assert!(found.is_empty(), "library crates print (use tracing events instead):\n{}", found.join("\n"));
}
