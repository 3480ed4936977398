//! `Engine::run` end to end: real workspace folder, real engine, real files.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use clix_engine::{EngineConfig, ShellLimits, ToolFormat, tool_definition};

mod support;
use support::{Dirs, Fixture};

async fn fixture_with(limits: ShellLimits) -> Fixture {
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";
    let dirs = Dirs::new()
        .file("notes.txt", "alpha\n\n\nbeta\tgamma\r\n")
        .file("photo.png", png)
        .file("blob.zip", b"PK\x03\x04\x14\0\0\0\x08\0\0\0!\0");
    let config = EngineConfig { limits, ..dirs.config() };
    dirs.start(config).await
}

async fn fixture() -> Fixture {
    fixture_with(ShellLimits::default()).await
}

/// The presentation without its footer, and the exit code.
async fn run(f: &mut Fixture, line: &str) -> (String, i32) {
    let out = f.engine.run(line, None).await;
    let footer_at = out.text.rfind("[exit:").expect("every result ends with a footer");
    let footer = &out.text[footer_at..];
    assert!(
        footer.starts_with(&format!("[exit:{} | ", out.exit_code)) && footer.ends_with(']'),
        "bad footer {footer:?}"
    );
    (out.text[..footer_at].to_string(), out.exit_code)
}

/// Issue 28, finding 6: a 470 KB PNG declaring 22000x22000 pixels took
/// clix to 1 GB and seconds of decoding; the header's size is refused first.
#[tokio::test]
async fn see_refuses_an_image_bomb_by_its_header() {
    let mut f = fixture().await;
    // The header, the first rows compressed, the end: no pixel data to speak of.
    let bomb = b"\x89\x50\x4e\x47\x0d\x0a\x1a\x0a\x00\x00\x00\x0d\x49\x48\x44\x52\x00\x00\x55\xf0\x00\x00\x55\xf0\x08\x00\x00\x00\x00\x63\x3a\x01\x38\x00\x00\x00\x6c\x49\x44\x41\x54\x78\x9c\xed\xc1\x81\x00\x00\x00\x00\xc3\xa0\xf9\x53\x9f\xe0\x06\x55\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xf0\x0c\x57\xd3\x00\x01\x83\x14\x85\x9a\x00\x00\x00\x00\x49\x45\x4e\x44\xae\x42\x60\x82";
    let small = b"\x89\x50\x4e\x47\x0d\x0a\x1a\x0a\x00\x00\x00\x0d\x49\x48\x44\x52\x00\x00\x00\x02\x00\x00\x00\x02\x08\x00\x00\x00\x00\x57\xdd\x52\xf8\x00\x00\x00\x0e\x49\x44\x41\x54\x78\x9c\x63\xf8\xcf\xc0\xc0\xf0\x1f\x00\x06\x00\x01\xff\x78\x5c\xb6\x81\x00\x00\x00\x00\x49\x45\x4e\x44\xae\x42\x60\x82";
    std::fs::write(f.ws.path().join("small.png"), small).unwrap();
    std::fs::write(f.ws.path().join("bomb.png"), bomb).unwrap();
    let (text, code) = run(&mut f, "see bomb.png").await;
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("22000x22000 is 484 megapixels, more than the 50 see decodes"), "{text}");
    let (text, code) = run(&mut f, "see small.png").await;
    let seen = format!("small.png: PNG image, 2x2, {} bytes; attached for viewing\n", small.len());
    assert_eq!((text, code), (seen, 0));
}

#[tokio::test]
async fn help_lists_commands_and_points_onwards() {
    let mut f = fixture().await;
    let (text, code) = run(&mut f, "help").await;
    assert_eq!(code, 0);
    assert!(text.contains("  write  write text to a file"), "{text}");
    assert!(text.contains("  cat    print files or stdin"), "{text}");
    assert!(text.contains(" grep,") && text.contains(" jq,"), "standard names listed: {text}");
    assert!(text.contains("More: help <command>, or <command> --help"));

    let (text, code) = run(&mut f, "help write").await;
    assert_eq!(code, 0);
    assert!(text.starts_with("write - write text to a file"), "{text}");
    assert!(text.contains("usage: write [-a|--append] <path> [content...]"));

    // A standard command's help is its own --help, else its usage.
    let (text, code) = run(&mut f, "help grep").await;
    assert_eq!((text, code), (run(&mut f, "grep --help").await.0, 0));
    let (text, code) = run(&mut f, "help cd").await;
    assert_eq!((text.lines().nth(1), code), (Some("Usage: cd [DIR]"), 0), "{text}");

    let cases = [
        ("help gerp", "[error] help: no command named gerp\ndid you mean: grep?\nUse: help (lists every command)\n"),
        (
            "help nope",
            "[error] help: no command named nope\nUse: help (lists every command); a program outside that list: \
             nope --help\n",
        ),
    ];
    for (line, want) in cases {
        assert_eq!(run(&mut f, line).await, (want.to_string(), 1), "{line}");
    }
}

/// `help NAME` for every name the catalog has, ours (listed or not) and
/// bashkit's: exit 0 and a text that names it.
#[tokio::test]
async fn help_knows_every_command_of_the_catalog() {
    let dirs = Dirs::new();
    // clip without environments runs but is not offered to the model.
    let clip = clix_clip::ClipConfig {
        environments: vec![],
        state_dir: dirs.state.path().to_path_buf(),
        audit_log: None,
        session_id: "help".into(),
        sandbox: None,
        clix_config_dir: None,
        output_cap_bytes: 1 << 20,
    };
    let config = EngineConfig { capabilities: vec![std::sync::Arc::new(clip)], ..dirs.config() };
    let mut f = dirs.start(config).await;
    let catalog = f.engine.catalog().clone();
    assert!(catalog.unlisted.iter().any(|s| s.name == "clip"), "{:?}", catalog.unlisted);
    let mut names = catalog.all_names();
    names.extend(catalog.unlisted.iter().map(|s| s.name.clone()));
    assert!(names.len() > 150, "{names:?}");
    let mut wrong = Vec::new();
    for name in &names {
        // Quoted: `[`, `.` and `:` are names too.
        let (text, code) = run(&mut f, &format!("help '{name}'")).await;
        if code != 0 || !text.contains(name.as_str()) {
            wrong.push(format!("{name}: exit {code}: {text}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[tokio::test]
async fn progressive_help_on_our_commands() {
    let mut f = fixture().await;
    let cases = [
        ("write", "[error] write: usage: write [-a|--append] <path> [content...]\n", 2),
        ("write -a", "[error] write: usage: write [-a|--append] <path> [content...]\n", 2),
    ];
    for (line, want, code) in cases {
        assert_eq!(run(&mut f, line).await, (want.to_string(), code), "{line}");
    }
    for line in ["write --help", "cat --help", "help --help", "write -h"] {
        let (text, code) = run(&mut f, line).await;
        assert_eq!(code, 0, "{line}");
        assert!(text.contains("usage: "), "{line}: {text}");
    }
}

#[tokio::test]
async fn write_from_args_and_stdin_creates_parents() {
    let mut f = fixture().await;
    assert_eq!(run(&mut f, "write a/b/c.txt hello  world").await, ("wrote 11 bytes to a/b/c.txt\n".into(), 0));
    assert_eq!(std::fs::read_to_string(f.ws.path().join("a/b/c.txt")).unwrap(), "hello world");
    assert_eq!(
        run(&mut f, "printf 'x\\ny\\n' | write out/piped.txt").await,
        ("wrote 4 bytes to out/piped.txt\n".into(), 0)
    );
    assert_eq!(run(&mut f, "write -a out/piped.txt z").await, ("appended 1 bytes to out/piped.txt\n".into(), 0));
    assert_eq!(std::fs::read_to_string(f.ws.path().join("out/piped.txt")).unwrap(), "x\ny\nz");
    let (text, code) = run(&mut f, "write notes.txt/inner x").await;
    assert_eq!(code, 1);
    assert!(text.starts_with("[error] write: notes.txt/inner: "), "{text}");
}

#[tokio::test]
async fn cat_options_match_gnu_and_b_is_base64() {
    let mut f = fixture().await;
    let cases = [
        ("cat -n notes.txt", "     1\talpha\n     2\t\n     3\t\n     4\tbeta\tgamma\r\n"),
        ("cat -s notes.txt", "alpha\n\nbeta\tgamma\r\n"),
        ("cat -A notes.txt", "alpha$\n$\n$\nbeta^Igamma^M$\n"),
        ("cat -sn notes.txt notes.txt | tail -n 2", "     5\t\n     6\tbeta\tgamma\r\n"),
        ("echo piped | cat - notes.txt | head -n 2", "piped\nalpha\n"),
    ];
    for (line, want) in cases {
        assert_eq!(run(&mut f, line).await, (want.to_string(), 0), "{line}");
    }
    let (text, code) = run(&mut f, "cat -b photo.png | base64 -d | cmp - photo.png && echo same").await;
    assert_eq!((text.as_str(), code), ("same\n", 0));
    let (text, code) = run(&mut f, "cat missing.txt notes.txt").await;
    assert_eq!(code, 1);
    assert!(text.starts_with("alpha\n"), "{text}");
    assert!(text.contains("[stderr] cat: missing.txt: No such file or directory\n"), "{text}");
    assert!(text.contains("try: find . -name 'missing.txt' (no missing.txt here)\n"), "{text}");
    // A pipe's exit is its last command's: the hint follows stderr.
    let (text, code) = run(&mut f, "cat nope.txt | wc -l").await;
    assert_eq!(code, 0);
    assert!(text.contains("try: find . -name 'nope.txt'"), "{text}");
    let (text, _) = run(&mut f, "echo 'a,b' | jq .").await;
    assert!(text.contains("try: jq reads JSON only; for CSV use csv"), "{text}");
    let (text, code) = run(&mut f, "cat -z notes.txt").await;
    assert_eq!(code, 1);
    assert!(text.contains("cat: invalid option -- 'z'") && text.contains("try: cat --help"), "{text}");
}

#[tokio::test]
async fn unknown_commands_navigate() {
    let mut f = fixture().await;
    let (text, code) = run(&mut f, "gerp alpha notes.txt").await;
    assert_eq!(code, 127);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "[error] unknown command: gerp");
    assert_eq!(lines[1], "did you mean: grep?");
    // Our commands by name, then the way to the full list: not ~200 names.
    let total = f.engine.catalog().all_names().len();
    assert_eq!(
        lines[2],
        format!(
            "Available: cat, help, see, write; standard tools such as grep, sed, awk, find, jq (help lists all {total})"
        )
    );
    assert_eq!(lines.len(), 3, "{text}");
    assert!(text.len() < 250, "{} bytes: {text}", text.len());

    let (text, code) = run(&mut f, "pip install requests").await;
    assert_eq!(code, 127);
    assert!(text.starts_with("[error] pip: packages cannot be installed: this session has no network;"), "{text}");
    // The failure is part of the line's semantics: `||` still runs.
    assert_eq!(run(&mut f, "nosuch 2>/dev/null || echo fallback").await, ("fallback\n".into(), 0));
}

/// Each program of the missing-programs table, as an agent would call it:
/// one line of what to do instead, exit 127, and no lookalike suggested.
#[tokio::test]
async fn missing_programs_say_what_to_do_instead() {
    let mut f = fixture().await;
    for entry in clix_present::MISSING_PROGRAMS {
        assert!(
            !clix_shell::builtin_names().iter().any(|b| b == entry.name),
            "{} is a built-in command: its table entry would never be shown",
            entry.name
        );
        let (text, code) = run(&mut f, &format!("{} --some-arg file.txt", entry.name)).await;
        let advice = clix_present::missing_program(entry.name, false).unwrap();
        assert_eq!((text, code), (format!("[error] {advice}\n"), 127), "{}", entry.name);
    }
    let (text, code) = run(&mut f, "rename -v .txt .md notes/").await;
    assert_eq!(code, 127);
    assert_eq!(
        text,
        "[error] rename: not available; use mv, e.g. for f in *.txt; do mv \"$f\" \"${f%.txt}.md\"; done\n"
    );
    // What the advice says works.
    std::fs::write(f.ws.path().join("a.txt"), "a").unwrap();
    let (text, code) = run(&mut f, "for f in *.txt; do mv \"$f\" \"${f%.txt}.md\"; done; ls *.md").await;
    assert_eq!((text.as_str(), code), ("a.md\nnotes.md\n", 0));
}

/// bashkit's HTTP clients have no network: without the OS tier (so without
/// a network) the error says so and how a person turns it on.
#[tokio::test]
async fn http_clients_say_the_session_has_no_network() {
    let mut f = fixture().await;
    for line in ["curl -s https://example.com", "wget -qO- https://example.com", "http GET https://example.com"] {
        let (text, code) = run(&mut f, line).await;
        let name = line.split(' ').next().unwrap();
        assert_eq!(code, 127, "{line}: {text}");
        assert_eq!(
            text,
            format!(
                "[error] {name}: this session has no network; a person can turn it on with --network (clix run, \
                 clix mcp) or sandbox.network = true\n"
            ),
            "{line}"
        );
    }
}

#[tokio::test]
async fn binary_output_never_reaches_the_model() {
    let mut f = fixture().await;
    let cases = [
        ("cat photo.png", "[error] cat: binary image file (33B, PNG). Use: see photo.png\n"),
        ("head -c 20 photo.png", "[error] head: binary image file (20B, PNG). Use: see photo.png\n"),
        (
            "cat blob.zip",
            "[error] cat: binary file (14B, application/zip). Use: cat -b blob.zip (base64), or redirect it to a file\n",
        ),
        (
            "cat photo.png | cat",
            "[error] cat: binary image data (33B, PNG). Save it to a file (… > out.png), then: see out.png\n",
        ),
    ];
    // The model did not get the output: the line is a failure to it (bash's own 0 stays in `raw`).
    for (line, want) in cases {
        assert_eq!(run(&mut f, line).await, (want.to_string(), 1), "{line}");
    }
    assert_eq!(f.engine.run("cat blob.zip", None).await.raw.exit_code, 0);
}

#[tokio::test]
async fn overflow_spills_a_file_the_next_call_can_read() {
    let mut f = fixture().await;
    let out = f.engine.run("seq 1 5000", None).await;
    assert!(out.truncated);
    assert_eq!(out.spill_path.as_deref(), Some(".clix/out/cmd-1.txt"));
    assert!(
        out.text.contains(
            "--- output truncated: 5000 lines, 23.3KB; showing lines 1-150 and 4951-5000 ---\n\
         Full output: .clix/out/cmd-1.txt\n"
        ),
        "{}",
        out.text
    );
    assert!(out.text.contains("\n150\n--- output") && out.text.contains("\n4951\n"));
    let on_disk = std::fs::read_to_string(f.ws.path().join(".clix/out/cmd-1.txt")).unwrap();
    assert_eq!(on_disk.lines().count(), 5000);
    assert_eq!(run(&mut f, "wc -l < .clix/out/cmd-1.txt").await, ("5000\n".into(), 0));
    assert_eq!(run(&mut f, "grep -n '^4242$' .clix/out/cmd-1.txt").await, ("4242:4242\n".into(), 0));
    // From a subfolder the path shown is absolute, so it still opens.
    let out = f.engine.run("mkdir -p sub && cd sub && seq 1 300", None).await;
    let path = out.spill_path.unwrap();
    assert!(path.starts_with('/') && path.ends_with(".clix/out/cmd-2.txt"), "{path}");
    assert_eq!(run(&mut f, &format!("tail -n 1 {path}")).await, ("300\n".into(), 0));
    assert_eq!(std::fs::read_to_string(f.ws.path().join(".clix/.gitignore")).unwrap(), "*\n");
}

#[tokio::test]
async fn stderr_always_shown_and_usage_errors_point_at_help() {
    let mut f = fixture().await;
    assert_eq!(run(&mut f, "echo out; echo warn >&2").await, ("out\n[stderr] warn\n".into(), 0));
    assert_eq!(run(&mut f, "true").await, ("(no output)\n".into(), 0));
    let (text, code) = run(&mut f, "grep").await;
    assert_eq!(code, 2);
    assert!(text.starts_with("[stderr] Usage: grep"), "{text}");
    assert!(text.ends_with("try: grep --help\n"), "{text}");
    // Every command answers --help, bashkit's builtins that have none too
    // (issue 52), with what `help NAME` says.
    for (line, topic) in [("cd --help", "help cd"), ("csv --help", "help csv")] {
        let (text, code) = run(&mut f, line).await;
        assert_eq!(code, 0, "{line}: {text}");
        let (help, code) = run(&mut f, topic).await;
        assert_eq!((code, text), (0, help), "{line}");
    }
}

#[tokio::test]
async fn timeout_says_how_to_proceed() {
    let mut f = fixture_with(ShellLimits { timeout_secs: 1, ..ShellLimits::default() }).await;
    let (text, code) = run(&mut f, "echo started; sleep 10").await;
    assert_eq!(code, 124);
    assert_eq!(text, "started\ntimed out after 1s; raise with --timeout or run it in the background\n");
}

#[tokio::test]
async fn tool_definition_is_compact_stable_and_complete() {
    let f = fixture().await;
    let a = tool_definition(f.engine.catalog(), ToolFormat::OpenAi);
    let b = tool_definition(fixture().await.engine.catalog(), ToolFormat::OpenAi);
    assert_eq!(a, b, "same registry, same bytes: prompt caches keep hitting");
    let description = a["function"]["description"].as_str().unwrap();
    assert!(description.len() <= 2 * 1024, "{} bytes", description.len());
    for needle in [
        "  write  ",
        "  help   ",
        "[exit:N | duration]",
        "200 lines or 50KB",
        " jq ",
        "help <command>",
        " grep ",
        "`help` lists them all",
    ] {
        assert!(description.contains(needle), "missing {needle:?}");
    }
    assert_eq!(a["function"]["parameters"]["required"], serde_json::json!(["command"]));
    let anthropic = tool_definition(f.engine.catalog(), ToolFormat::Anthropic);
    assert_eq!(anthropic["input_schema"], a["function"]["parameters"]);
    let mcp = tool_definition(f.engine.catalog(), ToolFormat::Mcp);
    assert_eq!(mcp["inputSchema"], a["function"]["parameters"]);
}

#[tokio::test]
async fn memory_command_levels_of_help_store_search_forget() {
    let data = tempfile::tempdir().unwrap();
    let memory = clix_memory::MemoryConfig {
        location: clix_memory::Location::File(data.path().join("memory.sqlite")),
        topic: "proj".into(),
        session: "s1".into(),
        // -t ops below: another topic than the session's (tests/memory.rs covers the default).
        settings: clix_memory::MemorySettings { cross_topic: true, ..Default::default() },
        ..Default::default()
    };
    let mut f = memory_fixture(memory).await;
    let cases = [
        ("memory", "[error] memory: usage: memory search|recent|store|facts|forget\n", 2),
        (
            "memory search",
            "[error] memory search: usage: memory search <query> [-t topic] [-k keyword] [-n 5] [--json]\n",
            2,
        ),
        ("memory store", "[error] memory store: usage: memory store <text> [-t topic] [--kind note|fact]\n", 2),
        ("memory forget", "[error] memory forget: usage: memory forget <id>\n", 2),
        ("memory fly", "[error] memory: no subcommand fly. usage: memory search|recent|store|facts|forget\n", 2),
        ("memory store x --kind memo", "[error] memory store: kind must be note, fact or summary, not \"memo\"\n", 1),
    ];
    for (line, want, code) in cases {
        assert_eq!(run(&mut f, line).await, (want.to_string(), code), "{line}");
    }
    assert_eq!(
        run(&mut f, "memory store the signing key rotates every Friday --kind fact").await.0,
        "stored #1 (fact, topic proj)\n"
    );
    assert_eq!(
        run(&mut f, "echo deploys go through CI | memory store -t ops").await.0,
        "stored #2 (note, topic ops)\n"
    );
    let (text, code) = run(&mut f, "memory search signing Friday").await;
    assert_eq!(code, 0);
    assert!(
        text.starts_with("#1 [proj · fact · ") && text.contains("[signing]") && text.contains("[Friday]"),
        "{text}"
    );
    let (json, _) = run(&mut f, "memory search deploys --json | jq -r '.[0].topic'").await;
    assert_eq!(json, "ops\n");
    assert_eq!(
        run(&mut f, "memory search deploys -t proj").await.0,
        "(no matching memories; try other words, or memory recent)\n"
    );
    assert!(run(&mut f, "memory facts").await.0.starts_with("#1 [proj · fact"));
    assert_eq!(run(&mut f, "memory recent 1").await.0.lines().count(), 1);
    assert_eq!(run(&mut f, "memory forget 1").await.0, "forgot #1\n");
    assert_eq!(
        run(&mut f, "memory search signing").await.0,
        "(no matching memories; try other words, or memory recent)\n"
    );
    assert_eq!(run(&mut f, "memory forget 1").await.0, "no memory #1; see memory recent\n");
}

async fn memory_fixture(memory: clix_memory::MemoryConfig) -> Fixture {
    let dirs = Dirs::new();
    let config = EngineConfig { capabilities: vec![std::sync::Arc::new(memory)], ..dirs.config() };
    dirs.start(config).await
}

#[tokio::test]
async fn memory_arguments_are_checked_and_a_broken_embedder_costs_only_vectors() {
    let data = tempfile::tempdir().unwrap();
    let settings = clix_memory::MemorySettings {
        embedder: "model2vec".into(),
        path: data.path().join("no-such-model").display().to_string(),
        ..Default::default()
    };
    let memory = clix_memory::MemoryConfig {
        location: clix_memory::Location::File(data.path().join("memory.sqlite")),
        topic: "proj".into(),
        session: "s1".into(),
        settings,
        ..Default::default()
    };
    let mut f = memory_fixture(memory).await;
    let (text, code) = run(&mut f, "memory store the build cache lives in target").await;
    assert_eq!(code, 0, "{text}");
    assert!(text.starts_with("stored #1 (note, topic proj)\n"), "{text}");
    assert!(text.contains("[warn] memory store: full-text search only: "), "the broken model is said: {text}");
    assert!(run(&mut f, "memory search cache").await.0.starts_with("#1 [proj · note"));
    let recent = "usage: memory recent [n] [-t topic] [--json]";
    for (line, want) in [
        (
            "memory recent foo",
            format!("[error] memory recent: recent needs a number of at least 1, not \"foo\". {recent}\n"),
        ),
        ("memory recent 1 2", format!("[error] memory recent: {recent}\n")),
        ("memory search -n 0 cache", "[error] memory search: -n needs a number of at least 1, not \"0\"".into()),
        ("memory search -x cache", "[error] memory search: unknown option -x (put -- before words".into()),
    ] {
        let (text, code) = run(&mut f, line).await;
        assert!(text.starts_with(&want) && code != 0, "{line}: {text}");
    }
    assert_eq!(
        run(&mut f, "memory store -- -v means verbose").await.0.lines().next(),
        Some("stored #2 (note, topic proj)")
    );
}

#[tokio::test]
async fn a_memory_store_that_failed_to_open_is_tried_again() {
    let data = tempfile::tempdir().unwrap();
    // The store's folder is a file: opening fails until it is moved away.
    let blocked = data.path().join("data");
    std::fs::write(&blocked, "not a folder").unwrap();
    let memory = clix_memory::MemoryConfig {
        location: clix_memory::Location::File(blocked.join("memory.sqlite")),
        topic: "proj".into(),
        session: "s1".into(),
        ..Default::default()
    };
    let mut f = memory_fixture(memory).await;
    let (text, code) = run(&mut f, "memory recent").await;
    assert_eq!(code, 1, "{text}");
    assert!(text.starts_with("[error] memory: "), "{text}");
    std::fs::remove_file(&blocked).unwrap();
    std::fs::create_dir(&blocked).unwrap();
    let (text, code) = run(&mut f, "memory store back again").await;
    assert_eq!((text.lines().next(), code), (Some("stored #1 (note, topic proj)"), 0), "{text}");
}

#[tokio::test]
async fn a_cancel_before_the_line_starts_cancels_that_line_and_only_it() {
    let mut f = fixture().await;
    let handle = f.engine.cancel_handle();
    // As an MCP cancel that races its call: it arrives before the line starts.
    handle.cancel();
    let (text, code) = run(&mut f, "echo ran > ran.txt; echo hi").await;
    assert_eq!(code, 130, "{text}");
    assert!(text.contains("clix: cancelled"), "{text}");
    assert!(!f.ws.path().join("ran.txt").exists(), "nothing of the cancelled line ran");
    assert_eq!(run(&mut f, "echo next").await, ("next\n".to_string(), 0), "the following line runs");
    // A cancel meant for no line (it came between two) is dropped by clear.
    handle.cancel();
    handle.clear();
    assert_eq!(run(&mut f, "echo after").await, ("after\n".to_string(), 0));
}
