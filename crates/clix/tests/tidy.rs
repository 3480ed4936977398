//! Tidy: ARCHITECTURE.md's map, enforced. The map's tiers say which
//! crates may use which (a dependency only goes down a tier), and its crate
//! graph is `cargo metadata`'s, checked here; so are the rules no tier
//! says: test support is never shipped, library crates print nothing, and
//! the binary and the tests build each shared crate once.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

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

/// ARCHITECTURE.md, the map these tests hold the tree to.
const MAP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../ARCHITECTURE.md");

/// The fenced block after `marker` in the map: its lines, and where it
/// starts and ends in `map` (for rewriting it).
fn block<'m>(map: &'m str, marker: &str) -> (Vec<&'m str>, usize, usize) {
    let at = map.find(marker).unwrap_or_else(|| panic!("ARCHITECTURE.md has no `{marker}`"));
    let open = at + map[at..].find("```text\n").expect("a ```text block after the marker") + "```text\n".len();
    let close = open + map[open..].find("```").expect("the block's end");
    (map[open..close].lines().collect(), open, close)
}

/// The tiers, top first: each a name and its crates.
fn tiers(map: &str) -> Vec<(String, Vec<String>)> {
    let (lines, _, _) = block(map, "<!-- tiers:");
    lines
        .iter()
        .map(|line| {
            // The tier's name may hold spaces and commas; its crates start at the first `clix`.
            let at = line.find("clix").unwrap_or_else(|| panic!("a tier without crates: {line}"));
            let crates = line[at..].split_whitespace().map(String::from).collect();
            (line[..at].trim().to_string(), crates)
        })
        .collect()
}

/// The graph as the map shows it: each crate (tier by tier, top first) and
/// the clix crates it uses.
fn render_graph(graph: &BTreeMap<String, BTreeSet<String>>, tiers: &[(String, Vec<String>)]) -> String {
    let width = graph.keys().map(String::len).max().unwrap_or(0);
    let mut out = String::new();
    for (_, crates) in tiers {
        let mut crates = crates.clone();
        crates.sort();
        for krate in crates {
            let deps: Vec<&str> = graph.get(&krate).into_iter().flatten().map(String::as_str).collect();
            let deps = if deps.is_empty() { "(none)".to_string() } else { deps.join(" ") };
            out.push_str(&format!("{krate:width$}  → {deps}\n"));
        }
    }
    out
}

#[test]
fn every_dependency_goes_down_a_tier() {
    let map = std::fs::read_to_string(MAP).expect("the map");
    let tiers = tiers(&map);
    let mut tier_of = BTreeMap::new();
    let mut wrong = Vec::new();
    for (rank, (name, crates)) in tiers.iter().enumerate() {
        for krate in crates {
            if let Some((other, _)) = tier_of.insert(krate.clone(), (name.clone(), rank)) {
                wrong.push(format!("{krate} is in two tiers: {other} and {name}"));
            }
        }
    }
    let graph = actual_graph();
    for (krate, deps) in &graph {
        let Some((name, rank)) = tier_of.get(krate) else {
            wrong.push(format!("{krate} is in no tier: add it to ARCHITECTURE.md's tiers"));
            continue;
        };
        for dep in deps {
            match tier_of.get(dep) {
                Some((_, below)) if below > rank => {}
                Some((other, _)) => {
                    wrong.push(format!("{krate} ({name}) depends on {dep} ({other}), not a lower tier"))
                }
                None => {}
            }
        }
    }
    for krate in tier_of.keys().filter(|k| !graph.contains_key(*k)) {
        wrong.push(format!("{krate} is in a tier but not in the workspace"));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_map_s_graph_is_cargo_s() {
    let map = std::fs::read_to_string(MAP).expect("the map");
    let (lines, open, close) = block(&map, "<!-- graph:");
    let want = render_graph(&actual_graph(), &tiers(&map));
    let shown: String = lines.iter().map(|l| format!("{l}\n")).collect();
    if shown == want {
        return;
    }
    if std::env::var_os("CLIX_BLESS").is_some() {
        std::fs::write(MAP, format!("{}{want}{}", &map[..open], &map[close..])).expect("rewrite the map");
        return;
    }
    panic!(
        "ARCHITECTURE.md's crate graph differs from cargo metadata; look at the change, then \
         CLIX_BLESS=1 cargo test -p clix --test tidy rewrites it.\nshown:\n{shown}\ncargo's:\n{want}"
    );
}

#[test]
fn test_support_and_front_ends_are_depended_on_by_nothing_shipped() {
    let mut wrong = Vec::new();
    for (krate, deps) in actual_graph() {
        if deps.contains("clix-testkit") && krate != "clix-bench" {
            wrong.push(format!("{krate} depends on clix-testkit (a dev-dependency only)"));
        }
        for front in ["clix", "clix-bench"] {
            if deps.contains(front) {
                wrong.push(format!("{krate} depends on {front}, a front end"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_crate_is_on_the_architecture_map() {
    let map = std::fs::read_to_string(MAP).expect("the map");
    for krate in actual_graph().keys() {
        assert!(map.contains(&format!("| `{krate}` |")), "ARCHITECTURE.md's table has no row for `{krate}`");
    }
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

/// The library crates print nothing: they emit `tracing` events, and the
/// one subscriber (clix-terminal's) decides where those go (stderr; stdout carries
/// results, and MCP under `clix mcp`).
#[test]
fn library_crates_print_nothing() {
    const PRINTS: &[&str] = &["println!", "print!(", "eprintln!", "eprint!(", "dbg!(", "io::stdout()", "io::stderr()"];
    let mut found = Vec::new();
    for krate in
        actual_graph().keys().filter(|k| !["clix", "clix-bench", "clix-testkit", "clix-terminal"].contains(&k.as_str()))
    {
        for (path, source) in sources(krate) {
            for (n, line) in source.lines().enumerate() {
                if !line.trim_start().starts_with("//") && PRINTS.iter().any(|p| line.contains(p)) {
                    found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(found.is_empty(), "library crates print (use tracing events instead):\n{}", found.join("\n"));
}

/// Every `.rs` file under `krate`'s `src/`, with its text.
fn sources(krate: &str) -> Vec<(std::path::PathBuf, String)> {
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("crates/");
    let mut dirs = vec![crates.join(krate).join("src")];
    let mut out = Vec::new();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let source = std::fs::read_to_string(&path).unwrap_or_default();
                out.push((path, source));
            }
        }
    }
    out
}

/// Exit codes have one home, `clix_common::exit`: outside it a code is
/// written by its name, so a number means the same from a shell line to
/// `clix ask`'s own exit. 0 may stay where it means success; tests
/// (`#[cfg(test)]` modules, `tests.rs` files) write what they expect.
#[test]
fn exit_codes_are_named_in_clix_common() {
    let found: Vec<String> = actual_graph()
        .keys()
        .filter(|k| *k != "clix-common")
        .flat_map(|krate| sources(krate))
        .filter(|(path, _)| path.file_stem().is_none_or(|stem| stem != "tests"))
        .flat_map(|(path, source)| {
            exit_code_literals(&source).into_iter().map(move |(n, line)| format!("{}:{n}: {line}", path.display()))
        })
        .collect();
    assert!(
        found.is_empty(),
        "exit codes written as numbers; name them from clix_common::exit (add the code there if it is new):\n{}",
        found.join("\n")
    );
}

/// The lines of `source` (outside its `#[cfg(test)]` modules) that write an
/// exit code as a number, with their numbers from 1: `ExitCode::from(3)`,
/// `process::exit(130)`, `exit_code: 2`, `exit_code == 255`, a constant
/// named like an exit code (`LIMIT_EXIT`, `CANNOT_RUN`) set to a number, and
/// `=> 1` or `unwrap_or(1)` inside a function named for an exit code or in
/// an `exit_code = match`.
fn exit_code_literals(source: &str) -> Vec<(usize, String)> {
    let common = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../clix-common/src/lib.rs")).unwrap();
    let named: Vec<String> =
        regex::Regex::new(r"pub const (\w+): i32").unwrap().captures_iter(&common).map(|c| c[1].to_string()).collect();
    assert!(named.iter().any(|n| n == "USAGE"), "clix_common::exit's names are read: {named:?}");
    let anywhere = regex::Regex::new(
        r"ExitCode::from\(\s*\d+\s*\)|process::exit\(\s*-?\d+\s*\)|\bexit_code\s*(?::|==|!=)\s*(?:-\d+|0*[1-9]\d*)\b",
    )
    .unwrap();
    let constant = regex::Regex::new(r"\bconst\s+(\w+)\s*:\s*(?:i32|u8|i64)\s*=\s*-?\d+\s*;").unwrap();
    let scope = regex::Regex::new(r"\bfn\s+\w*exit\w*\s*[(<]|\bexit_code\s*=\s*match\b").unwrap();
    let in_scope = regex::Regex::new(r"=>\s*(?:-\d+|0*[1-9]\d*)\b|unwrap_or\(\s*(?:-\d+|0*[1-9]\d*)\s*\)").unwrap();
    let mut found = Vec::new();
    // Brace depth, and the depth at which a test module or a scope opened.
    let (mut depth, mut test_module, mut code_scope) = (0i64, None::<i64>, None::<i64>);
    let mut cfg_test = false;
    for (n, line) in source.lines().enumerate() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        if code.starts_with("#[cfg(test)]") {
            cfg_test = true;
            continue;
        }
        if cfg_test && test_module.is_none() && code.starts_with("mod ") && code.ends_with('{') {
            test_module = Some(depth);
        }
        cfg_test &= code.starts_with("#[");
        if code_scope.is_none() && scope.is_match(code) {
            code_scope = Some(depth);
        }
        let named_like_a_code =
            constant.captures(code).is_some_and(|c| c[1].contains("EXIT") || named.iter().any(|name| *name == c[1]));
        let flagged = anywhere.is_match(code) || named_like_a_code || (code_scope.is_some() && in_scope.is_match(code));
        if flagged && test_module.is_none() {
            found.push((n + 1, code.to_string()));
        }
        depth += code.matches('{').count() as i64 - code.matches('}').count() as i64;
        if test_module.is_some_and(|d| depth <= d) {
            test_module = None;
        }
        if code_scope.is_some_and(|d| depth <= d) && code.contains('}') {
            code_scope = None;
        }
    }
    found
}

/// Each shared rule has one home (issue 53), and a second copy fails here:
/// shell quoting is clix-common's, a file lock is std's `File::lock`,
/// futures are joined by futures-util's `join_all`, and the audit line of
/// work given up is clix-audit's `Pending` (its `CANCELLED` written nowhere else).
#[test]
fn each_shared_rule_has_one_home() {
    // What a copy looks like, the one file that may hold it, what to use instead.
    let rules: &[(&str, Option<&str>, &str)] = &[
        ("fn shell_quote", Some("clix-common/src/quote.rs"), "clix_common::shell_quote"),
        ("fn quote_into", None, "clix_common::shell_quote_into"),
        ("libc::flock", None, "std::fs::File::lock or try_lock"),
        ("fn join_all", None, "futures_util::future::join_all"),
        ("\"CANCELLED\"", Some("clix-audit/src/pending.rs"), "clix_audit::Pending and clix_audit::CANCELLED"),
        ("impl Drop for Pending", Some("clix-audit/src/pending.rs"), "clix_audit::Pending"),
        ("fn timeout_line", Some("clix-common/src/wording.rs"), "clix_common::timeout_line"),
        ("fn format_duration", None, "clix_common::short_duration"),
        ("fn short_duration", Some("clix-common/src/wording.rs"), "clix_common::short_duration"),
        ("fn exported_env", Some("clix-command/src/paths.rs"), "clix_command::exported_env"),
        ("struct Deadline", Some("clix-command/src/time.rs"), "clix_command::Deadline"),
        ("struct CallTime", Some("clix-command/src/time.rs"), "clix_command::CallTime"),
        ("pub trait AgentCommand", Some("clix-command/src/spec.rs"), "clix_command::AgentCommand"),
        ("struct Syntax", Some("clix-command/src/flags/mod.rs"), "clix_command::flags::Syntax"),
        // One flag grammar: the hub's manifests and MCP's schemas are read
        // as typed parameters, every call's words by one reader.
        ("enum ArgError", Some("clix-command/src/flags/typed.rs"), "clix_command::flags::typed::ArgError"),
        ("enum Misuse", Some("clix-command/src/flags/mod.rs"), "clix_command::flags::Misuse"),
        ("fn value_of", None, "clix_command::flags::typed::Kind::read"),
        ("struct Words", Some("clix-command/src/flags/words.rs"), "clix_command::flags' word reader"),
        ("format!(\"{b:02x}\")", Some("clix-common/src/digest.rs"), "clix_common::hex or sha256_hex"),
        // One name per concept: a second type of the same name is another
        // concept and gets a name of its own.
        ("pub struct Session {", Some("clix-session/src/session.rs"), "a name of its own (the shell's is Shell)"),
        ("pub struct ToolCall {", Some("clix-agent/src/message.rs"), "a name of its own (eval's is TracedCall)"),
        ("pub struct McpConfig {", Some("clix-mcp-client/src/command/mod.rs"), "a name of its own (ServeConfig)"),
        ("pub struct Store {", Some("clix-memory/src/store.rs"), "a name of its own (CheckpointStore, SharedStore)"),
    ];
    let mut found = Vec::new();
    for krate in actual_graph().keys() {
        for (path, source) in sources(krate) {
            for (copy, home, instead) in rules {
                if home.is_some_and(|h| path.ends_with(h)) {
                    continue;
                }
                for (n, line) in source.lines().enumerate().filter(|(_, l)| l.contains(copy)) {
                    found.push(format!("{}:{}: {} (use {instead})", path.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(found.is_empty(), "a shared rule written a second time:\n{}", found.join("\n"));
}

/// The map's rules each say where they are checked from and state their
/// exceptions with them ("Exception: none" when there is none), and every
/// file an exception names exists: an exception moved or gone is a map
/// gone stale.
#[test]
fn every_rule_of_the_map_states_its_exceptions() {
    let map = std::fs::read_to_string(MAP).expect("ARCHITECTURE.md");
    let start = map.find("## Rules, and their exceptions").expect("ARCHITECTURE.md has its rules section");
    let section = &map[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |end| end + 3)];
    // One line per rule, however the paragraph is wrapped.
    let rules: Vec<String> =
        section.split("\n- **").skip(1).map(|r| r.split_whitespace().collect::<Vec<_>>().join(" ")).collect();
    assert!(rules.len() >= 10, "ARCHITECTURE.md's rules section lists {} rules:\n{section}", rules.len());
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut wrong = Vec::new();
    for rule in &rules {
        let name = rule.split("**").next().unwrap_or(rule.as_str());
        if !rule.contains("Exception: none") && !rule.contains("Exception: ") && !rule.contains("Exceptions: ") {
            wrong.push(format!("rule \"{name}\" states no exception (write \"Exception: none\" when it has none)"));
        }
        for cited in rule.split('`').skip(1).step_by(2) {
            let path = cited.split_whitespace().next().unwrap_or(cited);
            if (path.starts_with("crates/") || path.starts_with("scripts/")) && !root.join(path).exists() {
                wrong.push(format!("rule \"{name}\" names {path}, which does not exist"));
            }
        }
    }
    // The print rule's exceptions include the library the test above exempts.
    let prints = rules.iter().find(|r| r.starts_with("Library crates print nothing")).expect("the print rule");
    for exempt in ["clix-mcp", "clix-testkit", "clix-terminal"] {
        if !prints.contains(&format!("`{exempt}`")) {
            wrong.push(format!("the print rule does not name its exception {exempt}"));
        }
    }
    assert!(wrong.is_empty(), "ARCHITECTURE.md's rules:\n{}", wrong.join("\n"));
}
