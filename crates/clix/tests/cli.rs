//! The real `clix` binary, as a person or a script calls it.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

mod common;

use common::Env;

use std::process::{Command, Output, Stdio};

/// A workspace with a small log the tests grep.
fn env() -> Env {
    Env::new().with_file("app.log", "INFO a\nERROR b\nINFO c\nERROR d\n")
}

fn stdout(o: &Output) -> String {
    common::text(&o.stdout)
}

fn stderr(o: &Output) -> String {
    common::text(&o.stderr)
}

#[test]
fn run_prints_the_presentation_and_exits_with_the_line_code() {
    let env = env();
    let o = env.output(&["run", "grep -c ERROR app.log"]);
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    assert!(out.starts_with("2\n[exit:0 | ") && out.ends_with("ms]\n"), "{out}");
    assert_eq!(stderr(&o), "", "nothing else on stderr (no bashkit warnings)");

    let o = env.output(&["run", "echo partial; exit 3"]);
    assert_eq!(o.status.code(), Some(3));
    assert!(stdout(&o).starts_with("partial\n[exit:3 | "));
}

/// Issue 52: the words of one command need no quotes (`clix run ls -la`),
/// each kept as one word whatever it holds, while one argument is still a
/// whole line; clix's flags come before it, and `--` ends them.
#[test]
fn everyday_command_lines_run_as_the_words_make_them() {
    let env = env();
    std::fs::write(env.ws.path().join("a b.txt"), "x").unwrap();
    for (args, shown) in [
        (&["run", "--raw", "ls", "-1"][..], "a b.txt\napp.log\n"),
        (&["run", "--raw", "grep", "-c", "ERROR", "app.log"], "2\n"),
        (&["run", "--raw", "cat", "a b.txt"], "x"),
        (&["run", "--raw", "echo", "a|b", "$HOME", "it's"], "a|b $HOME it's\n"),
        (&["run", "--raw", "grep ERROR app.log | wc -l"], "2\n"),
        (&["run", "--raw", "--", "ls", "-1", "app.log"], "app.log\n"),
    ] {
        let o = env.output(args);
        assert_eq!(stdout(&o), shown, "{args:?}: {}", stderr(&o));
        assert_eq!(o.status.code(), Some(0), "{args:?}");
    }
}

#[test]
fn raw_mode_is_lossless_and_splits_streams() {
    let env = env();
    let o = env.output(&["run", "--raw", "printf 'a\\nb'; echo err >&2; exit 4"]);
    assert_eq!(o.stdout, b"a\nb");
    assert_eq!(stderr(&o), "err\n");
    assert_eq!(o.status.code(), Some(4));
}

#[test]
fn json_mode_reports_every_field() {
    let env = env();
    let o = env.output(&["run", "--json", "seq 1 300; echo oops >&2"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["stderr"], "oops\n");
    assert_eq!(v["stdout"].as_str().unwrap().lines().count(), 300);
    assert_eq!(v["truncated"], true);
    assert_eq!(v["spill_path"], ".clix/out/cmd-1.txt");
    assert!(v["duration_ms"].is_u64());
    // The same facts as MCP's structuredContent (one RunReport), plus the streams.
    assert_eq!((v["stdout_bytes"].as_u64(), v["stderr_bytes"].as_u64()), (Some(1092), Some(5)));
    let mut fields: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        ["duration_ms", "exit_code", "spill_path", "stderr", "stderr_bytes", "stdout", "stdout_bytes", "truncated"]
    );
    let spilled = std::fs::read_to_string(env.ws.path().join(".clix/out/cmd-1.txt")).unwrap();
    assert_eq!(spilled.lines().count(), 300);
}

/// Binary stdout is withheld from the reader, so the footer and the exit
/// say it failed; `--json` gives the bytes whole, as base64.
#[test]
fn binary_output_fails_and_json_gives_it_as_base64() {
    let env = env();
    std::fs::write(env.ws.path().join("blob.bin"), b"\x00\x01\x02binary").unwrap();
    let o = env.output(&["run", "cat blob.bin"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("binary file (9B)") && stdout(&o).contains("[exit:1 | "), "{}", stdout(&o));
    let o = env.output(&["run", "--json", "cat blob.bin"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((v["exit_code"].as_i64(), v["stdout_base64"].as_str()), (Some(1), Some("AAECYmluYXJ5")));
    assert!(v.get("stdout").is_none(), "{v}");
    assert_eq!(env.output(&["run", "--raw", "cat blob.bin"]).status.code(), Some(0), "--raw keeps bash's code");
}

#[test]
fn piped_stdin_feeds_the_line() {
    let env = env();
    let o = env.output_with_stdin(&["run", "--raw", "sort -r | head -n 2"], b"a\nc\nb\n");
    assert_eq!(stdout(&o), "c\nb\n");
}

#[test]
fn workspace_flag_and_timeout_flag() {
    let env = env();
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("only-here.txt"), "x").unwrap();
    let dir = other.path().to_str().unwrap();
    let o = env.output(&["run", "--raw", "--workspace", dir, "pwd; ls"]);
    let canonical = std::fs::canonicalize(other.path()).unwrap();
    assert_eq!(stdout(&o), format!("{}\nonly-here.txt\n", canonical.display()));

    let started = std::time::Instant::now();
    let o = env.output(&["run", "--timeout", "1", "sleep 120"]);
    assert_eq!(o.status.code(), Some(124));
    assert!(stdout(&o).contains("timed out after 1s; raise with --timeout"), "{}", stdout(&o));
    // Cut at the limit, not run to its end: a generous bound, far below 120 s.
    assert!(started.elapsed().as_secs() < 60);
}

#[test]
fn bad_input_gets_a_clear_error() {
    let env = env();
    let cases: [(&[&str], &str); 5] = [
        (&["run", "--workspace", "/definitely/missing", "ls"], "pass an existing folder with --workspace"),
        (&["run", "--workspace", "/", "ls"], "the host's root cannot be a workspace"),
        (&["run"], "<LINE>"),
        (&["run", "--timeout", "soon", "ls"], "invalid value 'soon'"),
        (&["run", "--timeout", "0", "ls"], "--timeout: limits.timeout_secs = 0: from 1 to 31536000"),
    ];
    for (args, needle) in cases {
        let o = env.output(args);
        assert_ne!(o.status.code(), Some(0), "{args:?}");
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
    std::fs::write(env.home.path().join("config.toml"), "[limits]\ntimeout = 5\n").unwrap();
    let o = env.output(&["run", "ls"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("limits: unknown field `timeout`; did you mean `timeout_secs`?"), "{}", stderr(&o));
}

/// (config.toml, the error): a value its setting does not allow, or a field
/// no section has, is refused naming the file, the key or section, and
/// what is allowed or the near name; every problem of every layer at once.
#[test]
fn config_values_are_checked_as_the_flags_are() {
    let env = env();
    let file = env.home.path().join("config.toml");
    let cases = [
        ("[limits]\ntimeout_secs = 0\n", "limits.timeout_secs = 0: from 1 to 31536000 (seconds of one line;"),
        ("[limits]\ntimout_secs = 5\n", "limits: unknown field `timout_secs`; did you mean `timeout_secs`?"),
        ("[limits]\ncolour = 5\n", "limits: unknown field `colour`; known fields: timeout_secs,"),
        ("[limts]\ntimeout_secs = 5\n", "unknown field `limts`; did you mean `limits`?"),
        ("[limits]\nmax_memory_bytes = 0\n", "limits.max_memory_bytes = 0: at least 1"),
        ("[limits]\nmax_commands = 0\n", "limits.max_commands = 0: at least 1 (commands; leave it out for no count)"),
        ("[sandbox]\nmemory_mb = 0\n", "sandbox.memory_mb = 0: from 1 to"),
        ("[sandbox]\nextra_ro = [\"data\"]\n", "sandbox.extra_ro = \"data\": absolute host paths"),
        ("[agent]\nmax_steps = 0\n", "agent.max_steps = 0: at least 1 (model calls of one task)"),
        ("[agent]\nprovider = \"antropic\"\n", "agent.provider = \"antropic\": \"auto\", \"openai\""),
        (
            "[[clip]]\nname = \"a\"\nkind = \"ssh\"\nhots = \"h\"\n",
            "clip[0]: unknown field `hots`; did you mean `host`?",
        ),
        // Issue 53: the sections an engine or a gate used to check only when built, checked at load.
        (
            "[[clip]]\nname = \"box\"\nkind = \"teleport\"\n",
            "clip[0] = \"box\": kind = \"teleport\" is not a kind; use one of ssh, container, kubernetes, local",
        ),
        ("[hub]\ndomains = [\"two words\"]\n", "hub.domains[0] = \"two words\": a domain's name (one word)"),
        (
            "[[policy.rule]]\nid = \"x\"\ndecision = \"deny\"\nwhy = \"w\"\n",
            "policy.rule = …: rule `x`: give exactly one of `match`, `program`, `redirect` or `shape`",
        ),
    ];
    for (text, want) in cases {
        std::fs::write(&file, text).unwrap();
        let o = env.output(&["run", "true"]);
        let want = format!("config file {}: {want}", file.display());
        assert_eq!(o.status.code(), Some(1), "{text}: {}", stderr(&o));
        assert!(stderr(&o).contains(&want), "{text}\n  got:  {}\n  want: {want}", stderr(&o));
    }

    std::fs::write(&file, "[limits]\ntimeout_secs = 0\nmax_commandz = 5\n").unwrap();
    let o = env.cmd(&["ask", "--max-steps", "0", "hello"]).env("CLIX_SANDBOX_MEMORY_MB", "0").output().unwrap();
    let err = stderr(&o);
    for want in [
        format!("config file {}: limits.timeout_secs = 0: from 1 to", file.display()),
        format!("config file {}: limits: unknown field `max_commandz`; did you mean `max_commands`?", file.display()),
        "environment variable CLIX_SANDBOX_MEMORY_MB: sandbox.memory_mb = 0: from 1 to".to_string(),
        "--max-steps: agent.max_steps = 0: at least 1 (model calls of one task)".to_string(),
    ] {
        assert!(err.contains(&want), "missing {want}\nin {err}");
    }

    // A good config loads, with a count the defaults leave unset.
    std::fs::write(&file, "[limits]\ntimeout_secs = 5\nmax_commands = 1000\n[agent]\nmax_steps = 3\n").unwrap();
    let o = env.output(&["run", "echo ok"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = env.output(&["config", "show", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", stderr(&o)));
    assert_eq!(v["limits.max_commands"]["value"], 1000);
}

#[test]
fn config_lives_under_clix_home_and_shows_its_sources() {
    let env = env();
    let o = env.output(&["config", "path"]);
    assert_eq!(stdout(&o).trim(), env.home.path().join("config.toml").display().to_string());
    assert_eq!(env.output(&["config", "init"]).status.code(), Some(0));
    let written = std::fs::read_to_string(env.home.path().join("config.toml")).unwrap();
    assert!(written.contains("timeout_secs = 30"), "{written}");
    assert_eq!(env.output(&["config", "init"]).status.code(), Some(1), "never overwrites");

    std::fs::write(env.home.path().join("config.toml"), "[present]\nmax_lines = 10\n").unwrap();
    let o = env.cmd(&["config", "show", "--json"]).env("CLIX_LIMITS_TIMEOUT_SECS", "9").output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["present.max_lines"]["value"], 10);
    assert!(v["present.max_lines"]["source"].as_str().unwrap().starts_with("file "));
    assert_eq!(v["limits.timeout_secs"]["value"], 9);
    assert_eq!(v["limits.timeout_secs"]["source"], "env CLIX_LIMITS_TIMEOUT_SECS");
    assert_eq!(v["present.tail_lines"]["source"], "default");
    // The provider's variables are shown in force, the key never.
    let o = env
        .cmd(&["config", "show", "--json"])
        .env("AGENT_MODEL", "fake")
        .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
        .env("AGENT_API_KEY", "sk-canary-config-show")
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", stderr(&o)));
    assert_eq!(v["agent.model"]["value"], "fake");
    assert_eq!(v["agent.model"]["source"], "env AGENT_MODEL");
    assert_eq!(v["agent.base_url"]["value"], "http://127.0.0.1:9/v1");
    assert_eq!(v["agent.base_url"]["source"], "env OPENAI_BASE_URL");
    assert_eq!(v["agent.api_key"]["value"], "***");
    assert_eq!(v["agent.api_key"]["source"], "env AGENT_API_KEY");
    assert!(!stdout(&o).contains("canary"), "{}", stdout(&o));
    // A mistyped CLIX_ variable is an error naming the variable it meant, for every command.
    for args in [&["config", "show"][..], &["run", "true"][..]] {
        let o = env.cmd(args).env("CLIX_LIMITS_TIMOUT_SECS", "5").output().unwrap();
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("CLIX_LIMITS_TIMOUT_SECS: not a clix setting; did you mean CLIX_LIMITS_TIMEOUT_SECS?"),
            "{}",
            stderr(&o)
        );
    }
    // A setting empty by default is still a key the file may set.
    std::fs::write(env.home.path().join("config.toml"), "[browser]\nexecutable = \"/opt/chrome\"\n").unwrap();
    let o = env.output(&["config", "show", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|_| panic!("{}", stderr(&o)));
    assert_eq!(v["browser.executable"]["value"], "/opt/chrome");
    std::fs::write(env.home.path().join("config.toml"), "[present]\nmax_lines = 10\n").unwrap();

    // The file's threshold is in force for `run`.
    let o = env.output(&["run", "seq 1 11"]);
    assert!(stdout(&o).contains("--- output truncated: 11 lines"), "{}", stdout(&o));
    assert!(!env.ws.path().join("config.toml").exists());
}

#[test]
fn tool_def_in_every_format_and_commands_list() {
    let env = env();
    for (format, path) in [("openai", "/function/description"), ("anthropic", "/description"), ("mcp", "/description")]
    {
        let o = env.output(&["tool-def", "--format", format]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let description = v.pointer(path).and_then(|d| d.as_str()).unwrap();
        assert!(description.len() <= 6 * 1024 && description.contains("write"), "{format}");
    }
    let o = env.output(&["commands", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let agent: Vec<&str> = v["agent"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(agent, ["browser", "cat", "help", "memory", "sandbox", "see", "write"]);
    assert!(v["standard"].as_array().unwrap().iter().any(|n| n == "grep"));
}

#[test]
fn no_color_help_has_no_escape_codes() {
    let env = env();
    let o = env.cmd(&["run", "--help"]).env("NO_COLOR", "1").output().unwrap();
    let out = stdout(&o);
    assert!(out.contains("--workspace") && out.contains("--raw") && out.contains("--json"));
    assert!(!out.contains('\x1b'));
}

#[test]
fn secrets_in_clix_environment_never_reach_sandboxed_programs() {
    let env = env();
    let script = "python3 -c 'import os; print(sorted(k for k in os.environ if \"SECRET\" in k or \"KEY\" in k))'";
    let o = env
        .cmd(&["run", "--raw", script])
        .env("HOME", std::env::var_os("HOME").unwrap_or_default())
        .env("MY_SECRET_TOKEN", "hunter2")
        .env("OPENAI_API_KEY", "sk-test")
        .output()
        .unwrap();
    assert_eq!(stdout(&o), "[]\n", "{}", stderr(&o));
    let o = env.cmd(&["run", "--raw", "sandbox run env"]).env("MY_SECRET_TOKEN", "hunter2").output().unwrap();
    assert!(stdout(&o).contains("PATH=") && !stdout(&o).contains("hunter2"), "{}", stdout(&o));
}

#[test]
fn a_missing_sandbox_is_a_clear_error_never_a_host_run() {
    let env = env();
    let o = env
        .cmd(&["run", "python3 -c 'open(\"ran-on-host\", \"w\")'"])
        .env("CLIX_BWRAP", "/nonexistent/bwrap")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(126));
    assert!(
        stdout(&o).starts_with(
            "[error] sandbox unavailable: bubblewrap (bwrap) is not installed. Fix: apt-get install bubblewrap"
        ),
        "{}",
        stdout(&o)
    );
    assert!(!env.ws.path().join("ran-on-host").exists());
    // Only an explicit, documented setting runs programs on the host.
    std::fs::write(env.home.path().join("config.toml"), "[sandbox]\nmode = \"host\"\n").unwrap();
    let o = env.cmd(&["run", "--raw", "sandbox status"]).env("CLIX_BWRAP", "/nonexistent/bwrap").output().unwrap();
    assert!(stdout(&o).starts_with("isolation: NONE: sandbox.mode = \"host\""), "{}", stdout(&o));
}

#[test]
fn config_show_never_prints_an_api_key() {
    let env = env();
    std::fs::write(env.home.path().join("config.toml"), "[agent]\napi_key = \"sk-from-file-123456\"\n").unwrap();
    let o = env.output(&["config", "show"]);
    assert!(stdout(&o).contains("agent.api_key") && stdout(&o).contains("\"***\""), "{}", stdout(&o));
    assert!(!stdout(&o).contains("sk-from-file"));
    let o = env.output(&["config", "show", "--json"]);
    assert!(!stdout(&o).contains("sk-from-file"));
}

#[test]
fn clix_memory_is_the_agents_memory_command_for_people() {
    let env = env();
    let o = env.output(&["memory"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stderr(&o), "[error] memory: usage: memory search|recent|store|facts|forget\n");
    let o = env.output(&["memory", "store", "it's $(rm -rf /) literally", "--kind", "fact"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("stored #1 (fact, topic "), "{}", stdout(&o));
    let o = env.output(&["memory", "search", "literally", "--json"]);
    let hits: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(hits[0]["text"], "it's $(rm -rf /) literally");
    assert_eq!(hits[0]["kind"], "fact");
    // The agent sees the same store through run.
    let o = env.output(&["run", "--raw", "memory facts"]);
    assert!(stdout(&o).contains("it's $(rm -rf /) literally"), "{}", stdout(&o));
    assert!(env.home.path().join("data/memory.sqlite").exists());
}

#[test]
fn completion_scripts_know_the_subcommands() {
    let env = env();
    let o = env.output(&["completions", "bash"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let script = stdout(&o);
    assert!(script.contains("complete -F _clix"), "{script}");
    for sub in ["run", "tool-def", "commands", "ask", "chat", "runs", "replay", "mcp", "hub", "memory", "config"] {
        assert!(script.contains(&format!("clix,{sub})")), "bash completion lacks {sub}");
    }
    assert!(script.contains("--workspace") && script.contains("--network"), "flags completed too");
    for shell in ["zsh", "fish"] {
        let o = env.output(&["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{shell}: {}", stderr(&o));
        assert!(stdout(&o).contains("tool-def"), "{shell}");
    }
    let o = env.output(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("possible values: bash"), "{}", stderr(&o));
}

/// A reader that is gone before clix writes a byte: every write is EPIPE.
fn closed_pipe() -> std::io::PipeWriter {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    writer
}

#[test]
fn a_closed_stdout_ends_clix_quietly_in_every_output_path() {
    let env = env();
    let cases: [&[&str]; 8] = [
        &["run", "seq 1 100000"],
        &["run", "--raw", "seq 1 100000"],
        &["run", "--json", "seq 1 100000"],
        &["commands"],
        &["tool-def"],
        &["config", "show"],
        &["completions", "bash"],
        &["memory", "recent"],
    ];
    for args in cases {
        let o = env.cmd(args).stdout(closed_pipe()).stderr(Stdio::piped()).output().unwrap();
        assert_eq!(o.status.code(), Some(141), "{args:?}: as a program killed by SIGPIPE: {}", stderr(&o));
        assert_eq!(stderr(&o), "", "{args:?}: no panic, no message to a reader who left");
    }
}

#[test]
fn clix_run_into_head_c_10_is_quiet() {
    let env = env();
    let mut clix = env.cmd(&["run", "seq 1 100000"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let head = Command::new("head").arg("-c").arg("10").stdin(clix.stdout.take().unwrap()).output().unwrap();
    let o = clix.wait_with_output().unwrap();
    assert_eq!(head.stdout, b"1\n2\n3\n4\n5\n");
    // Whether clix wrote everything before head left depends on timing; a panic never.
    assert!(matches!(o.status.code(), Some(0 | 141)), "{:?}: {}", o.status, stderr(&o));
    assert_eq!(stderr(&o), "");
}

#[test]
fn debug_says_where_each_stage_ran_and_stdout_stays_the_result() {
    let env = env();
    std::fs::write(env.ws.path().join("x.py"), "print('x')\nprint('y here')\n").unwrap();
    // HOME, so the sandbox mounts the toolchains on PATH (pyenv's python3) as for a person.
    let home = std::env::var_os("HOME").unwrap_or_default();
    for line in ["python3 x.py | grep y", "P=python3; $P x.py | grep y"] {
        let o = env.cmd(&["run", "--log-level", "debug", line]).env("HOME", &home).output().unwrap();
        let (out, err) = (stdout(&o), stderr(&o));
        assert_eq!(o.status.code(), Some(0), "{line}: {out}{err}");
        assert!(out.starts_with("y here\n[exit:0 | ") && !out.contains("DEBUG"), "{line}: only the result: {out}");
        let debug: Vec<&str> = err.lines().filter(|l| l.contains(" DEBUG ")).collect();
        let says = |needles: &[&str]| debug.iter().any(|l| needles.iter().all(|n| l.contains(n)));
        // Before the line runs: each stage, where and why.
        assert!(
            says(&["stage: where it runs", "command=\"grep\"", "runs=\"shell\"", "builtin of the in-process shell"]),
            "{line}: {err}"
        );
        if line.starts_with('P') {
            assert!(says(&["stage: where it runs", "decided at run time", "the command name is computed"]), "{err}");
        } else {
            assert!(says(&["stage: where it runs", "command=\"python3\"", "runs=\"sandbox\""]), "{err}");
        }
        // As it runs: the OS resolver's own choice, with the program, computed name or not.
        assert!(
            says(&[
                "OS resolver",
                "command=\"python3\"",
                "runs=\"sandbox\"",
                "found on the sandbox's PATH",
                "python3\"",
            ]),
            "{line}: {err}"
        );
    }
    // A name found nowhere: the resolver says why it is unknown.
    let o = env.cmd(&["run", "--log-level", "debug", "no-such-tool-x1"]).output().unwrap();
    assert_eq!(o.status.code(), Some(127));
    assert!(stderr(&o).contains("not on the sandbox's PATH: exit 127"), "{}", stderr(&o));
}

/// `clix eval SUITE --solution`: a task whose reference solution passes in
/// every design and that doing nothing fails is fine (exit 0, its row in
/// the tables, results.json written); a wrong solution is a problem (exit 1).
#[test]
fn eval_plays_reference_solutions_through_every_design() {
    let env = env();
    let task = |id: &str, solution: &str| {
        serde_json::json!({
            "id": id, "category": "text", "description": "count errors",
            "prompt": "How many ERROR lines are in app.log?",
            "files": {"app.log": "INFO a\nERROR b\nERROR c\n"},
            "expectations": [{"check": "stdout_contains:2"}, {"check": "exit_code:0"}],
            "solution": [solution],
        })
        .to_string()
    };
    let suite = env.ws.path().join("suite.jsonl");
    std::fs::write(&suite, format!("{}\n", task("count_errors", "grep -c ERROR app.log"))).unwrap();
    let out = env.ws.path().join("results");
    let o = env.output(&["eval", "suite.jsonl", "--solution", "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let tables = stdout(&o);
    for design in ["run", "bash", "typed"] {
        assert!(tables.contains(design), "{design} is missing from the tables: {tables}");
    }
    assert!(tables.contains("count_errors"), "{tables}");
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(results["schema_version"], clix_eval::SCHEMA_VERSION);

    std::fs::write(&suite, format!("{}\n", task("miscounted", "grep -c INFO app.log"))).unwrap();
    let o = env.output(&["eval", "suite.jsonl", "--solution", "--tools", "run"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("PROBLEM") && stderr(&o).contains("miscounted"), "{}", stderr(&o));
}

/// Issue 52: every command inside `run` answers `NAME --help` with its
/// usage and exit 0 (bash's builtins and GNU's tools do; clix promises it
/// of all), and every subcommand of clix's own commands `NAME SUB --help`.
/// The few that take `--help` as an ordinary word in bash do so here too.
#[test]
fn every_command_and_subcommand_answers_help() {
    let env = env();
    let listed: serde_json::Value = serde_json::from_slice(&env.output(&["commands", "--json"]).stdout).unwrap();
    let agent = listed["agent"].as_array().unwrap();
    let mut names: Vec<String> = agent.iter().map(|c| c["name"].as_str().unwrap().to_string()).collect();
    names.extend(listed["standard"].as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_string()));
    assert!(names.len() > 150, "{names:?}");
    let operands = [":", "true", "false", "test", "[", "echo"];
    let quoted = |word: &str| format!("'{}'", word.replace('\'', r"'\''"));
    let mut probes: Vec<(String, String)> = names
        .iter()
        .filter(|n| !operands.contains(&n.as_str()))
        .map(|n| (n.clone(), format!("{} --help", quoted(n))))
        .collect();
    // Subcommands, from each agent command's usage: `memory search|recent|… ARGS`.
    for command in agent {
        let (name, usage) = (command["name"].as_str().unwrap(), command["usage"].as_str().unwrap());
        let first = usage.strip_prefix(name).unwrap_or("").split_whitespace().next().unwrap_or("");
        if first.contains('|') {
            for sub in first.split('|').filter(|s| s.chars().all(|c| c.is_ascii_lowercase() || c == '-')) {
                probes.push((format!("{name} {sub}"), format!("{name} {sub} --help")));
            }
        }
    }
    assert!(probes.iter().any(|(what, _)| what == "memory search"), "no subcommands found: {probes:?}");
    let script: String = probes
        .iter()
        .map(|(what, line)| format!("out=$({line} 2>/dev/null </dev/null); echo \"$?:${{#out}}:{what}\"\n"))
        .collect();
    let o = env.output(&["run", "--raw", &script]);
    let report = stdout(&o);
    let mut failures = Vec::new();
    let mut seen = 0;
    for row in report.lines() {
        let mut parts = row.splitn(3, ':');
        let (code, length, what) = (parts.next(), parts.next(), parts.next().unwrap_or(row));
        seen += 1;
        if code != Some("0") || length == Some("0") {
            failures.push(format!("{what}: exit {}, {} bytes", code.unwrap_or("?"), length.unwrap_or("?")));
        }
    }
    assert_eq!(seen, probes.len(), "{report}\n{}", stderr(&o));
    assert!(failures.is_empty(), "{} without --help:\n{}", failures.len(), failures.join("\n"));
}
