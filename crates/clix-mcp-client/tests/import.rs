//! `import` on a Claude-Desktop-shaped file (with Claude Code's and
//! Cursor's HTTP entries): what it writes, what it skips and why, and that
//! no literal secret of the file reaches the config.
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use clix_common::settings::Validate;
use clix_mcp_client::{McpSettings, Transport, import};

const FILE: &str = include_str!("fixtures/claude_desktop_config.json");

fn read_back(toml_text: &str) -> McpSettings {
    #[derive(serde::Deserialize)]
    struct Config {
        mcp: McpSettings,
    }
    toml::from_str::<Config>(toml_text).unwrap().mcp
}

#[test]
fn a_claude_desktop_file_becomes_mcp_server_entries() {
    let imported = import(FILE, &["fx"]).unwrap();
    let names: Vec<&str> = imported.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["filesystem", "github", "memory", "notion", "sentry", "weather"]);

    // The text written is what was imported, and a valid section.
    let written = imported.toml();
    let back = read_back(&written);
    assert_eq!(back.server, imported.servers);
    assert_eq!(back.validate(), vec![]);
    assert_eq!(written.matches("[[mcp.server]]").count(), 6, "{written}");

    // No literal secret (nor any literal env value) is written.
    for literal in ["ghp_literalsecret", "ntn_literaltoken", "acme-literal-org", "metric"] {
        assert!(!written.contains(literal), "{literal} in {written}");
        assert!(!format!("{imported:?}").contains(literal), "{literal} in the Debug");
    }
    let by_name = |n: &str| imported.servers.iter().find(|s| s.name == n).unwrap();
    let github = by_name("github");
    assert_eq!(github.transport(), Transport::Stdio);
    assert_eq!(github.command.as_deref(), Some("docker"));
    assert_eq!(github.env, ["GITHUB_PERSONAL_ACCESS_TOKEN"]);
    assert_eq!(by_name("weather").env, ["OPENWEATHER_KEY", "WEATHER_UNITS"]);
    assert_eq!(by_name("notion").headers["Authorization"], "Bearer ${NOTION_TOKEN}");
    let sentry = by_name("sentry");
    assert_eq!(sentry.transport(), Transport::Http);
    assert_eq!(sentry.headers["Authorization"], "Bearer ${SENTRY_TOKEN}");
    assert_eq!(sentry.headers["X-Org"], "${SENTRY_X_ORG}");
    assert!(!by_name("memory").enabled);
    assert!(!by_name("filesystem").network, "the network stays off until the person says so");

    // The person exports what the file held literally; `${SAME}` needs nothing new.
    assert_eq!(imported.export, ["GITHUB_PERSONAL_ACCESS_TOKEN", "NOTION_TOKEN", "SENTRY_X_ORG", "WEATHER_UNITS"]);

    let skipped: Vec<(&str, &str)> = imported.skipped.iter().map(|s| (s.name.as_str(), s.reason.as_str())).collect();
    assert_eq!(skipped.len(), 3, "{skipped:#?}");
    let reason = |n: &str| skipped.iter().find(|(name, _)| *name == n).unwrap().1;
    assert!(
        reason("brave search").contains("cannot be a command name")
            && reason("brave search").contains("`brave-search`")
    );
    assert!(reason("linear").contains("legacy SSE transport"), "{}", reason("linear"));
    assert!(reason("fx").contains("already configured"), "{}", reason("fx"));
    assert_eq!(imported.notes, ["memory: ignored alwaysAllow (clix has no such setting)"]);
}

#[test]
fn a_file_without_mcp_servers_is_refused_with_what_was_expected() {
    let no_servers = import("{\"servers\": {}}", &[]).unwrap_err();
    assert!(matches!(no_servers, clix_mcp_client::ImportError::NoServers));
    assert!(no_servers.to_string().contains("no `mcpServers` object"), "{no_servers}");
    let not_json = import("not json", &[]).unwrap_err();
    assert!(matches!(not_json, clix_mcp_client::ImportError::NotJson(_)));
    assert!(not_json.to_string().starts_with("not JSON"), "{not_json}");
    let odd = r#"{"mcpServers": {"a": {"type": "ws", "url": "ws://h"}, "b": {"args": ["x"]}, "c": 3}}"#;
    let imported = import(odd, &[]).unwrap();
    assert!(imported.servers.is_empty());
    let reasons: Vec<&str> = imported.skipped.iter().map(|s| s.reason.as_str()).collect();
    assert_eq!(reasons.len(), 3);
    assert!(reasons[0].contains("type \"ws\" is not one clix speaks"), "{reasons:?}");
    assert!(reasons[1].contains("neither a `command`"), "{reasons:?}");
    assert!(reasons[2].contains("not an object"), "{reasons:?}");
}

/// Security round 4, finding 3: literal secrets in `args` and `url` (after
/// a secret flag, token-shaped, a URL's password or key) become named
/// variables, as `env` and headers do; what is not secret stays as written.
#[test]
fn literal_secrets_in_args_and_urls_become_named_variables() {
    let file = r#"{"mcpServers": {
        "gh": {"command": "gh-mcp", "args": ["--token", "ghp_0123456789abcdefghij", "--repo", "o/r"]},
        "db": {"command": "pg-mcp", "args": ["postgresql://admin:pw0rd@db:5432/app", "--api-key=k3y", "sk-proj-abcdefghijklmnop"]},
        "maps": {"url": "https://maps.test/mcp?key=AIzaSyA-literal-key-123&lang=en"},
        "hook": {"url": "https://u:hunter2@hooks.test/mcp/Zk9xR2p3TGs4bVFuV3ZkYnVhN0p4UTJyY0Fz"},
        "kept": {"command": "tool", "args": ["--port", "8080", "${ALREADY}", "https://plain.test/x?q=1"]}
    }}"#;
    let imported = import(file, &[]).unwrap();
    let by_name = |n: &str| imported.servers.iter().find(|s| s.name == n).unwrap();
    assert_eq!(by_name("gh").args, ["--token", "${GH_TOKEN}", "--repo", "o/r"]);
    assert_eq!(
        by_name("db").args,
        ["postgresql://admin:${DB_PASSWORD}@db:5432/app", "--api-key=${DB_API_KEY}", "${DB_TOKEN}"]
    );
    assert_eq!(by_name("maps").url.as_deref(), Some("https://maps.test/mcp?key=${MAPS_KEY}&lang=en"));
    assert_eq!(by_name("hook").url.as_deref(), Some("https://u:${HOOK_PASSWORD}@hooks.test/mcp/${HOOK_TOKEN}"));
    assert_eq!(by_name("kept").args, ["--port", "8080", "${ALREADY}", "https://plain.test/x?q=1"]);
    assert_eq!(
        imported.export,
        // The file's servers are read in name order.
        ["DB_PASSWORD", "DB_API_KEY", "DB_TOKEN", "GH_TOKEN", "HOOK_PASSWORD", "HOOK_TOKEN", "MAPS_KEY"]
    );
    let written = imported.toml();
    for literal in ["ghp_0123456789", "pw0rd", "k3y", "sk-proj-", "AIzaSy", "hunter2", "Zk9xR2p3"] {
        assert!(!written.contains(literal), "{literal} in {written}");
    }
    assert_eq!(read_back(&written).validate(), vec![], "the variables are valid templates");
}
