//! The argv of each child, per kind: pure functions, so tests can assert
//! them exactly.
//!
//! No shell string is built here except the one line given to the remote
//! shell: for `ssh` it is one argument (ssh hands the remote login shell a
//! string, so the line is quoted inside it once); for containers and pods
//! the line stays its own argv element.

use std::path::Path;
use std::time::Duration;

use crate::config::{Container, Environment, Kubernetes, Shell, Ssh, Target};

/// Seconds SIGTERM waits before SIGKILL in the remote `timeout` wrapper.
const REMOTE_KILL_AFTER: &str = "2";

/// How long a kept-open SSH connection lives after its last use.
pub const CONTROL_PERSIST: &str = "300";

/// The fixed script that runs `"$@"` under `timeout -k 2 "$0"` where the
/// other side has `timeout`, and plainly where it has not. Its arguments
/// are argv elements, never pasted into it.
pub const WRAPPER: &str =
    "if command -v timeout >/dev/null 2>&1; then exec timeout -k 2 \"$0\" \"$@\"; else exec \"$@\"; fi";

/// Whole seconds for the remote `timeout`, rounded up (the local kill comes
/// first, and says it was the time limit), at least 1.
pub fn remote_seconds(limit: Duration) -> String {
    limit.as_millis().div_ceil(1000).max(1).to_string()
}

/// The ssh options every call shares: batch mode first (ssh keeps the first
/// value it is given, so the person's `options` cannot turn it off), then
/// the person's options, then connection sharing through `socket`, which
/// theirs may override. A call uses the master connection when one is up
/// (`ControlMaster=no`: else it connects by itself); the master is started
/// apart ([`ssh_master`]), so no call's output pipes are held by it.
pub fn ssh_options(ssh: &Ssh, socket: &Path, connect_timeout: Option<u64>, master: bool) -> Vec<String> {
    let mut argv = vec!["-o".to_string(), "BatchMode=yes".to_string()];
    for option in &ssh.options {
        argv.push("-o".into());
        argv.push(option.clone());
    }
    if let Some(secs) = connect_timeout {
        argv.push("-o".into());
        argv.push(format!("ConnectTimeout={secs}"));
    }
    let sharing = if master {
        vec!["ControlMaster=yes".to_string(), format!("ControlPersist={CONTROL_PERSIST}")]
    } else {
        vec!["ControlMaster=no".to_string()]
    };
    for option in sharing.into_iter().chain([format!("ControlPath={}", socket.display())]) {
        argv.push("-o".into());
        argv.push(option);
    }
    if let Some(identity) = &ssh.identity_file {
        argv.push("-i".into());
        argv.push(identity.display().to_string());
    }
    argv
}

/// `-p PORT -l USER -- HOST`.
fn ssh_destination(ssh: &Ssh) -> Vec<String> {
    let mut argv = Vec::new();
    if let Some(port) = ssh.port {
        argv.extend(["-p".to_string(), port.to_string()]);
    }
    if let Some(user) = &ssh.user {
        argv.extend(["-l".to_string(), user.clone()]);
    }
    argv.extend(["--".to_string(), ssh.host.clone()]);
    argv
}

/// `ssh -E LOG … ControlMaster=yes ControlPersist=300 … -f -N -- host`:
/// the shared connection, started on its own; it goes to the background
/// once authenticated, and its errors go to `log`.
pub fn ssh_master(ssh: &Ssh, socket: &Path, log: &Path, connect_timeout: u64) -> Vec<String> {
    let mut argv = vec!["ssh".to_string(), "-E".to_string(), log.display().to_string()];
    argv.extend(ssh_options(ssh, socket, Some(connect_timeout), true));
    argv.extend(["-f".to_string(), "-N".to_string()]);
    argv.extend(ssh_destination(ssh));
    argv
}

/// `ssh … -- host '<wrapped line>'`: the line run by the remote shell under
/// a remote `timeout`, so the remote command ends with the time limit even
/// when only the local client is killed.
pub fn ssh_run(ssh: &Ssh, socket: &Path, shell: Shell, line: &str, limit: Duration) -> Vec<String> {
    let mut argv = vec!["ssh".to_string()];
    argv.extend(ssh_options(ssh, socket, Some(10), false));
    argv.extend(ssh_destination(ssh));
    argv.push(ssh_remote_line(shell, line, limit));
    argv
}

/// The one string the remote login shell is given. bash runs with
/// `--norc`: started under sshd it would read `~/.bashrc` again, which the
/// login shell that runs this string has already done (on the test machine
/// that second read cost 300 ms a call).
pub fn ssh_remote_line(shell: Shell, line: &str, limit: Duration) -> String {
    let program = match shell {
        Shell::Bash => "bash --norc",
        Shell::Sh => "sh",
    };
    let (quoted, secs) = (clix_common::shell_quote(line), remote_seconds(limit));
    format!(
        "if command -v timeout >/dev/null 2>&1; then exec timeout -k {REMOTE_KILL_AFTER} {secs} {program} -c {quoted}; \
         else exec {program} -c {quoted}; fi"
    )
}

/// `[user@]host:path` for scp.
fn scp_remote(ssh: &Ssh, path: &str) -> String {
    let host = if ssh.host.contains(':') { format!("[{}]", ssh.host) } else { ssh.host.clone() };
    match &ssh.user {
        Some(user) => format!("{user}@{host}:{path}"),
        None => format!("{host}:{path}"),
    }
}

fn scp_base(ssh: &Ssh, socket: &Path) -> Vec<String> {
    let mut argv = vec!["scp".to_string(), "-q".to_string(), "-r".to_string(), "-p".to_string()];
    argv.extend(ssh_options(ssh, socket, Some(10), false));
    if let Some(port) = ssh.port {
        argv.extend(["-P".to_string(), port.to_string()]);
    }
    argv.push("--".into());
    argv
}

/// `scp -q -r -p … -- [user@]host:REMOTE LOCAL`.
pub fn scp_pull(ssh: &Ssh, socket: &Path, remote: &str, local: &Path) -> Vec<String> {
    let mut argv = scp_base(ssh, socket);
    argv.extend([scp_remote(ssh, remote), local.display().to_string()]);
    argv
}

/// `scp -q -r -p … -- LOCAL [user@]host:REMOTE`.
pub fn scp_push(ssh: &Ssh, socket: &Path, local: &Path, remote: &str) -> Vec<String> {
    let mut argv = scp_base(ssh, socket);
    argv.extend([local.display().to_string(), scp_remote(ssh, remote)]);
    argv
}

/// `<engine> exec -i <container> sh -c WRAPPER <secs> <shell> -c LINE`.
pub fn container_run(c: &Container, shell: Shell, line: &str, limit: Duration) -> Vec<String> {
    let mut argv = vec![c.engine.clone(), "exec".into(), "-i".into(), c.container.clone()];
    argv.extend(wrapped(shell, line, limit));
    argv
}

/// `<engine> inspect -f {{.State.Running}} <container>`.
pub fn container_probe(c: &Container) -> Vec<String> {
    [c.engine.as_str(), "inspect", "-f", "{{.State.Running}}", c.container.as_str()].map(String::from).to_vec()
}

/// `<engine> cp <container>:REMOTE LOCAL`.
pub fn container_pull(c: &Container, remote: &str, local: &Path) -> Vec<String> {
    vec![c.engine.clone(), "cp".into(), format!("{}:{remote}", c.container), local.display().to_string()]
}

/// `<engine> cp LOCAL <container>:REMOTE`.
pub fn container_push(c: &Container, local: &Path, remote: &str) -> Vec<String> {
    vec![c.engine.clone(), "cp".into(), local.display().to_string(), format!("{}:{remote}", c.container)]
}

/// `kubectl [--context C] [-n NS]`.
fn kubectl(k: &Kubernetes) -> Vec<String> {
    let mut argv = vec!["kubectl".to_string()];
    if let Some(context) = &k.context {
        argv.extend(["--context".to_string(), context.clone()]);
    }
    if let Some(ns) = &k.namespace {
        argv.extend(["-n".to_string(), ns.clone()]);
    }
    argv
}

/// `kubectl … exec -i POD [-c C] -- sh -c WRAPPER <secs> <shell> -c LINE`.
pub fn kubectl_run(k: &Kubernetes, pod: &str, shell: Shell, line: &str, limit: Duration) -> Vec<String> {
    let mut argv = kubectl(k);
    argv.extend(["exec".to_string(), "-i".to_string(), pod.to_string()]);
    if let Some(c) = &k.container {
        argv.extend(["-c".to_string(), c.clone()]);
    }
    argv.push("--".into());
    argv.extend(wrapped(shell, line, limit));
    argv
}

/// The jsonpath that prints `name ready-status` per pod, one a line.
pub const READY_JSONPATH: &str = "jsonpath={range .items[*]}{.metadata.name}{\" \"}\
    {.status.conditions[?(@.type==\"Ready\")].status}{\"\\n\"}{end}";

/// `kubectl … get pods -l SELECTOR -o jsonpath=…`: the pods and whether each is ready.
pub fn kubectl_pods(k: &Kubernetes, selector: &str) -> Vec<String> {
    let mut argv = kubectl(k);
    argv.extend(["get", "pods", "-l", selector, "-o", READY_JSONPATH].map(String::from));
    argv
}

/// `kubectl … get pod POD -o jsonpath={.status.phase}`.
pub fn kubectl_probe(k: &Kubernetes, pod: &str) -> Vec<String> {
    let mut argv = kubectl(k);
    argv.extend(["get", "pod", pod, "-o", "jsonpath={.status.phase}"].map(String::from));
    argv
}

/// `kubectl … cp [-c C] POD:REMOTE LOCAL`.
pub fn kubectl_pull(k: &Kubernetes, pod: &str, remote: &str, local: &Path) -> Vec<String> {
    let mut argv = kubectl(k);
    argv.push("cp".into());
    if let Some(c) = &k.container {
        argv.extend(["-c".to_string(), c.clone()]);
    }
    argv.extend([format!("{pod}:{remote}"), local.display().to_string()]);
    argv
}

/// `kubectl … cp [-c C] LOCAL POD:REMOTE`.
pub fn kubectl_push(k: &Kubernetes, pod: &str, local: &Path, remote: &str) -> Vec<String> {
    let mut argv = kubectl(k);
    argv.push("cp".into());
    if let Some(c) = &k.container {
        argv.extend(["-c".to_string(), c.clone()]);
    }
    argv.extend([local.display().to_string(), format!("{pod}:{remote}")]);
    argv
}

/// `sh -c WRAPPER <secs> <shell> -c LINE`.
fn wrapped(shell: Shell, line: &str, limit: Duration) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        WRAPPER.into(),
        remote_seconds(limit),
        shell.program().into(),
        "-c".into(),
        line.into(),
    ]
}

/// The first ready pod in `kubectl_pods`' output.
pub fn first_ready(listing: &str) -> Option<String> {
    listing.lines().find_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
        [name, "True"] => Some(name.to_string()),
        _ => None,
    })
}

/// The program a kind runs on the host, for "not installed" messages.
pub fn client(env: &Environment) -> &str {
    match &env.target {
        Target::Ssh(_) => "ssh",
        Target::Container(c) => &c.engine,
        Target::Kubernetes(_) => "kubectl",
        Target::Local(_) => "bwrap",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ssh() -> Ssh {
        Ssh {
            host: "h.example".into(),
            user: Some("deploy".into()),
            port: Some(2222),
            identity_file: Some("/k/id".into()),
            options: vec!["UserKnownHostsFile=/k/known".into()],
        }
    }

    #[test]
    fn ssh_argv_is_batch_mode_shared_and_one_remote_word() {
        let argv =
            ssh_run(&ssh(), Path::new("/s/box-1"), Shell::Bash, "echo 'hi' | wc -c", Duration::from_millis(29_850));
        let want = [
            "ssh",
            "-o",
            "BatchMode=yes",
            "-o",
            "UserKnownHostsFile=/k/known",
            "-o",
            "ConnectTimeout=10",
            "-o",
            "ControlMaster=no",
            "-o",
            "ControlPath=/s/box-1",
            "-i",
            "/k/id",
            "-p",
            "2222",
            "-l",
            "deploy",
            "--",
            "h.example",
        ];
        assert_eq!(&argv[..want.len()], want);
        assert_eq!(argv.len(), want.len() + 1, "the remote line is one argument");
        assert_eq!(
            argv[want.len()],
            "if command -v timeout >/dev/null 2>&1; then exec timeout -k 2 30 bash --norc -c 'echo '\\''hi'\\'' | wc -c'; \
             else exec bash --norc -c 'echo '\\''hi'\\'' | wc -c'; fi"
        );
        let master = ssh_master(&ssh(), Path::new("/s/box-1"), Path::new("/s/box-1.log"), 3);
        let shared = ["ControlMaster=yes", "-o", "ControlPersist=300", "-o", "ControlPath=/s/box-1"];
        assert!(master.windows(shared.len()).any(|w| w == shared), "{master:?}");
        assert_eq!(&master[..3], ["ssh", "-E", "/s/box-1.log"]);
        assert_eq!(&master[master.len() - 8..], ["-f", "-N", "-p", "2222", "-l", "deploy", "--", "h.example"]);
        let pull = scp_pull(&ssh(), Path::new("/s/box-1"), "/var/log/x y", Path::new("/t/x y"));
        assert_eq!(&pull[..4], ["scp", "-q", "-r", "-p"]);
        assert_eq!(&pull[pull.len() - 4..], ["2222", "--", "deploy@h.example:/var/log/x y", "/t/x y"]);
    }

    #[test]
    fn container_and_pod_argv_keep_the_line_one_element() {
        let c = Container { engine: "podman".into(), container: "web".into() };
        let argv = container_run(&c, Shell::Sh, "ls -l", Duration::from_secs(30));
        assert_eq!(argv, ["podman", "exec", "-i", "web", "sh", "-c", WRAPPER, "30", "sh", "-c", "ls -l"]);
        let k = Kubernetes {
            context: Some("kind".into()),
            namespace: Some("prod".into()),
            pod: crate::config::Pod::Named("api-0".into()),
            container: Some("app".into()),
        };
        let argv = kubectl_run(&k, "api-0", Shell::Bash, "echo hi", Duration::from_secs(5));
        let want = [
            "kubectl",
            "--context",
            "kind",
            "-n",
            "prod",
            "exec",
            "-i",
            "api-0",
            "-c",
            "app",
            "--",
            "sh",
            "-c",
            WRAPPER,
            "5",
            "bash",
            "-c",
            "echo hi",
        ];
        assert_eq!(argv, want);
        assert_eq!(first_ready("a False\nb True\nc True\n").as_deref(), Some("b"));
        assert_eq!(first_ready("a False\n"), None);
    }
}
