//! Programs an agent commonly reaches for that are not here, each with
//! what to do instead, in one line. The data behind the unknown-command
//! error: consulted only for a name that really is missing (a program on
//! the sandbox's PATH runs as usual; only an editor is not opened on a file,
//! see [`needs_a_terminal`]). An installed program of the table that fails
//! for a reason of this place gets its line too ([`failure_hint`]).

/// One program that is not here, and what works instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MissingProgram {
    /// The command name an agent types (`rename`, `vim`, `sudo`).
    pub name: &'static str,
    /// What to do instead, one line, without the name.
    pub advice: &'static str,
    /// Said instead of `advice` when the session has no network, for
    /// programs that need it (`None`: the same advice either way).
    pub offline: Option<&'static str>,
    /// An interactive editor: even when installed it is not started on a
    /// file (see [`needs_a_terminal`]).
    pub editor: bool,
}

const fn entry(name: &'static str, advice: &'static str) -> MissingProgram {
    MissingProgram { name, advice, offline: None, editor: false }
}

const fn net(name: &'static str, advice: &'static str, offline: &'static str) -> MissingProgram {
    MissingProgram { name, advice, offline: Some(offline), editor: false }
}

const fn editor(name: &'static str) -> MissingProgram {
    MissingProgram { name, advice: EDITOR, offline: None, editor: true }
}

const NO_NETWORK: &str = "this session has no network; a person can turn it on with --network (clix run, clix mcp) \
                          or sandbox.network = true";
const NO_NETWORK_PACKAGES: &str = "packages cannot be installed: this session has no network; use what is \
                                   installed, or ask a person to turn the network on (--network or sandbox.network = true)";
const EDITOR: &str = "no interactive editor here; write the whole file with write FILE (content as an argument or on \
                      stdin, e.g. a heredoc), or change lines with sed -i 's/old/new/' FILE";
const SUDO: &str = "not available and not needed; run the command itself, without it (the workspace is writable)";
const SYSTEM_PACKAGES: &str =
    "system packages cannot be installed here; use the programs already available (help lists the commands)";
const SERVICES: &str = "no services or init system here; run the program directly (it lives as long as the command \
                        line), e.g. python3 app.py";
const NETWORK_SETTINGS: &str =
    "not available; programs here share the host's network as it is, check a host with curl -sSI URL";
const REMOTE: &str = "not available; there is no remote login from here, fetch files over HTTP with curl -sSLO URL";
const SEARCH: &str = "not available; use grep -rn PATTERN . (or rg PATTERN)";
const IMAGES: &str = "not available (no ImageMagick); use see FILE, which prints an image's type and size and \
                      shows it to you";

/// The table: one entry per program, in no particular order. Names bashkit
/// runs itself are not in it: its `sudo` runs the command, its `less` and
/// `more` print like `cat`.
pub const MISSING_PROGRAMS: &[MissingProgram] = &[
    entry("rename", "not available; use mv, e.g. for f in *.txt; do mv \"$f\" \"${f%.txt}.md\"; done"),
    editor("vim"),
    editor("vi"),
    editor("nvim"),
    editor("nano"),
    editor("emacs"),
    editor("pico"),
    entry("code", EDITOR),
    entry("su", SUDO),
    entry("doas", SUDO),
    entry("apt", SYSTEM_PACKAGES),
    entry("apt-get", SYSTEM_PACKAGES),
    entry("yum", SYSTEM_PACKAGES),
    entry("dnf", SYSTEM_PACKAGES),
    entry("apk", SYSTEM_PACKAGES),
    entry("pacman", SYSTEM_PACKAGES),
    entry("brew", SYSTEM_PACKAGES),
    entry("snap", SYSTEM_PACKAGES),
    net("pip", "not available; use python3 -m pip", NO_NETWORK_PACKAGES),
    net("pip3", "not available; use python3 -m pip", NO_NETWORK_PACKAGES),
    net("npm", SYSTEM_PACKAGES, NO_NETWORK_PACKAGES),
    entry("python", "not available; use python3"),
    entry("service", SERVICES),
    entry("systemctl", SERVICES),
    entry("journalctl", "no system journal here; read the program's own output or log files (tail, grep)"),
    entry("docker", "containers cannot run here; run the program directly (programs run in a sandbox already)"),
    entry("podman", "containers cannot run here; run the program directly (programs run in a sandbox already)"),
    net("ifconfig", NETWORK_SETTINGS, NO_NETWORK),
    net("netstat", NETWORK_SETTINGS, NO_NETWORK),
    net("ping", "not available; check a host with curl -sSI URL", NO_NETWORK),
    net("nslookup", "not available; check a host with curl -sSI URL", NO_NETWORK),
    net("dig", "not available; check a host with curl -sSI URL", NO_NETWORK),
    net("ssh", REMOTE, NO_NETWORK),
    net("scp", REMOTE, NO_NETWORK),
    net("curl", "not available; use wget -qO- URL", NO_NETWORK),
    net("wget", "not available; use curl -sSLO URL", NO_NETWORK),
    net(
        "http",
        "not available; use curl, e.g. curl -sS URL, or curl -sS --json '{\"k\": 1}' URL to post JSON",
        NO_NETWORK,
    ),
    entry("open", "nothing opens on a screen here; read text with cat FILE, look at an image with see FILE"),
    entry("xdg-open", "nothing opens on a screen here; read text with cat FILE, look at an image with see FILE"),
    entry("top", "not available; use ps (each command line runs on its own)"),
    entry("htop", "not available; use ps (each command line runs on its own)"),
    entry("fd", "not available; use find, e.g. find . -name '*.py'"),
    entry("ag", SEARCH),
    entry("ack", SEARCH),
    entry("bat", "not available; use cat -n FILE"),
    // Qwen2.5-Coder-1.5B asked `identify swatch.png` three times for a colour.
    entry("identify", IMAGES),
    entry("convert", IMAGES),
    entry("magick", IMAGES),
    // Small models put the tool's own name first: run(command="run grep …").
    entry(
        "run",
        "there is no run command: this line already runs in the run tool; send the command itself, e.g. grep -c ERROR app.log",
    ),
];

/// What to do instead of `name`, one line (`name: …`), when it is in the table.
pub fn missing_program(name: &str, network: bool) -> Option<String> {
    let entry = MISSING_PROGRAMS.iter().find(|e| e.name == name)?;
    let advice = match entry.offline {
        Some(offline) if !network => offline,
        _ => entry.advice,
    };
    Some(format!("{name}: {advice}"))
}

/// Arguments with which an editor runs without a screen: ex and batch
/// modes, version and help.
const EDITOR_BATCH_FLAGS: &[&str] = &["-e", "-E", "-es", "-Es", "--batch", "--script", "--version", "--help", "-h"];

/// The advice line when `name args` would open an editor's screen. A
/// session never has a terminal, so an installed editor would only wait
/// for the line's time limit (vim does, its output piped); its batch modes
/// (`vim -es`, `emacs --batch`, `--version`) run as usual.
pub fn needs_a_terminal(name: &str, args: &[String]) -> Option<String> {
    let entry = MISSING_PROGRAMS.iter().find(|e| e.name == name && e.editor)?;
    let batch = args.iter().any(|a| EDITOR_BATCH_FLAGS.contains(&a.as_str()));
    (!batch).then(|| format!("{name}: {}", entry.advice))
}

/// What to say when a program failed writing what git runs on the host
/// (the repository's config, hooks, info), which the sandbox keeps
/// read-only: its own error (`could not write config file .git/config:
/// Device or resource busy`) does not say why, nor what to do.
pub fn protected_git_hint(stderr: &[u8]) -> Option<&'static str> {
    let text = String::from_utf8_lossy(stderr);
    let refused = ["Device or resource busy", "Read-only file system"].iter().any(|e| text.contains(e));
    let names_git = [".git/config", ".git/hooks", ".git/info"].iter().any(|p| text.contains(p));
    (refused && names_git).then_some(
        "the repository's config, hooks and info are read-only here (git runs them on the person's machine \
         later); ask the person to change them, or pass a setting for one command: git -c key=value …",
    )
}

/// What to say when `name` is installed but failed: the advice, when it is
/// about this environment whatever is installed (no terminal for an editor,
/// no system packages, no network), not the absence of the program.
pub fn failure_hint(name: &str, network: bool) -> Option<String> {
    missing_program(name, network).filter(|line| !line[name.len() + 2..].starts_with("not available"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every entry: one line, a name once, advice that names something to run.
    #[test]
    fn each_entry_is_one_line_of_advice() {
        for (i, e) in MISSING_PROGRAMS.iter().enumerate() {
            assert!(!e.name.is_empty() && !e.name.contains(char::is_whitespace), "{e:?}");
            assert!(MISSING_PROGRAMS[..i].iter().all(|other| other.name != e.name), "{} twice", e.name);
            for network in [false, true] {
                let line = missing_program(e.name, network).unwrap();
                assert!(line.starts_with(&format!("{}: ", e.name)), "{line}");
                assert!(!line.contains('\n') && line.len() <= 200, "{} is not one short line: {line}", e.name);
                // An entry's answer leads somewhere: a command, or the person who can turn the network on.
                let leads = ["use ", "write ", "run ", "--network", "help", "cat ", "tail", "curl "];
                assert!(leads.iter().any(|l| line.contains(l)), "{} leads nowhere: {line}", e.name);
            }
            if e.offline.is_some() {
                assert!(missing_program(e.name, false).unwrap().contains("--network"), "{}", e.name);
            }
        }
    }

    #[test]
    fn a_refused_write_to_what_git_runs_is_explained() {
        for (stderr, hinted) in [
            ("error: could not write config file .git/config: Device or resource busy\n", true),
            ("sh: 1: cannot create .git/hooks/pre-commit: Read-only file system\n", true),
            ("error: could not lock config file /home/u/.gitconfig: Read-only file system\n", false),
            ("fatal: not a git repository\n", false),
        ] {
            assert_eq!(protected_git_hint(stderr.as_bytes()).is_some(), hinted, "{stderr}");
        }
    }

    #[test]
    fn the_network_changes_only_network_entries() {
        assert_eq!(
            missing_program("curl", false).unwrap(),
            "curl: this session has no network; a person can turn it on with --network (clix run, clix mcp) or \
             sandbox.network = true"
        );
        assert_eq!(missing_program("curl", true).unwrap(), "curl: not available; use wget -qO- URL");
        assert_eq!(missing_program("python", false), missing_program("python", true));
        assert_eq!(missing_program("grep", false), None);
        assert!(
            missing_program("identify", false)
                .unwrap()
                .starts_with("identify: not available (no ImageMagick); use see FILE")
        );
    }

    #[test]
    fn editors_need_a_terminal_except_in_their_batch_modes() {
        let args = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let cases: [(&str, &[&str], bool); 7] = [
            ("vim", &["notes.txt"], true),
            ("vi", &[], true),
            ("nano", &["-w", "a.txt"], true),
            ("vim", &["-es", "-c", "%s/a/b/g|wq", "a.txt"], false),
            ("emacs", &["--batch", "-l", "x.el"], false),
            ("vim", &["--version"], false),
            ("python", &["x.py"], false),
        ];
        for (name, list, opens) in cases {
            let got = needs_a_terminal(name, &args(list));
            assert_eq!(got.is_some(), opens, "{name} {list:?}");
            if let Some(line) = got {
                assert_eq!(line, missing_program(name, false).unwrap());
            }
        }
    }

    #[test]
    fn an_installed_program_that_failed_gets_only_advice_about_the_environment() {
        let cases = [
            ("vim", true, Some("vim: no interactive editor here")),
            ("apt-get", true, Some("apt-get: system packages cannot be installed here")),
            ("pip", false, Some("pip: packages cannot be installed: this session has no network")),
            ("curl", false, Some("curl: this session has no network")),
            ("pip", true, None),
            ("curl", true, None),
            ("rename", false, None),
            ("python", false, None),
            ("grep", false, None),
        ];
        for (name, network, want) in cases {
            let got = failure_hint(name, network);
            match want {
                Some(start) => assert!(got.as_deref().is_some_and(|g| g.starts_with(start)), "{name}: {got:?}"),
                None => assert_eq!(got, None, "{name}"),
            }
        }
    }
}
