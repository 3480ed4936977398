//! The workspace is hostile: a program in the sandbox can plant symlinks to
//! host files, FIFOs and folder swaps in `.clix/hub`. These tests plant them
//! for real, with a canary outside the workspace, and check that loading
//! the hub never reads, quotes, mounts or writes anything outside.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that cannot unwrap has failed, which is what it should do

use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clix_hub::{Hub, HubConfig, HubRuntime, HubSource, LoadOptions, hub_sources, load_file, load_hub};
use clix_workspace::Workspace;

const CANARY: &str = "CANARY-7c1e-host-secret";

/// A workspace, a folder outside it holding the canary, and a hub folder of
/// the user's own, each a canonical temporary folder.
struct Scene {
    _dirs: Vec<tempfile::TempDir>,
    ws: PathBuf,
    outside: PathBuf,
    user_hub: PathBuf,
}

impl Scene {
    fn new() -> Self {
        let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
        let path = |i: usize| fs::canonicalize(dirs[i].path()).unwrap();
        let scene = Scene { ws: path(0), outside: path(1), user_hub: path(2), _dirs: dirs };
        let o = &scene.outside;
        write(&o.join("secret.toml"), &format!("{CANARY} = \"first line of a host file\"\n"));
        write(&o.join("secret.json"), &format!("{{\"{CANARY}\": 1,,}}"));
        write(&o.join("secret.txt"), &format!("{CANARY}\n"));
        write(&o.join("dir/manifest.toml"), &format!("name = \"{CANARY}\"\n!!\n"));
        write(&o.join("dir/secret.txt"), &format!("{CANARY}\n"));
        write(&o.join("dotclix/hub/x.toml"), &format!("{CANARY} = = 1\n"));
        write(&o.join("bin/canary.txt"), &format!("{CANARY}\n"));
        exe(&o.join("bin/tool"), "cat \"$(dirname \"$0\")/canary.txt\"");
        exe(&o.join("bin/only-here"), "echo '{}'");
        fs::create_dir_all(scene.ws.join(".clix/hub")).unwrap();
        scene
    }

    fn ws_hub(&self) -> PathBuf {
        self.ws.join(".clix/hub")
    }

    fn workspace(&self) -> Workspace {
        Workspace::open(&self.ws).unwrap()
    }

    /// `outside/rest` as a path relative to the workspace's `.clix/hub`.
    fn relative_outside(&self, rest: &str) -> String {
        assert_eq!(self.ws.parent(), self.outside.parent(), "both are in the same temporary folder");
        format!("../../../{}/{rest}", self.outside.file_name().unwrap().to_string_lossy())
    }

    /// Loads the workspace's hub (and `more` sources) as a session does.
    fn load(&self, more: &[HubSource]) -> Hub {
        let mut sources = vec![HubSource::workspace(self.ws_hub())];
        sources.extend_from_slice(more);
        load_hub(&sources, &self.opts(), Some(&self.workspace()))
    }

    /// PATH is the folder outside (a user's own bin) and the system's.
    fn opts(&self) -> LoadOptions {
        let path = format!("{}:/usr/bin:/bin", self.outside.join("bin").display());
        LoadOptions { search_path: Some(path.into()) }
    }

    /// Everything under the folder outside, to check nothing was written there.
    fn outside_snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut out = BTreeMap::new();
        snapshot(&self.outside, &mut out);
        out
    }
}

fn snapshot(dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let meta = fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            snapshot(&path, out);
        } else {
            out.insert(path.clone(), fs::read(&path).unwrap_or_default());
        }
    }
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn exe(path: &Path, script: &str) {
    write(path, &format!("#!/bin/sh\n{script}\n"));
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

fn manifest(name: &str, command: &str) -> String {
    format!(r#"{{"name": {name:?}, "version": "1", "description": "d", "command": {command:?}}}"#)
}

fn mkfifo(path: &Path) {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo {}", path.display());
}

/// Everything a person or a model can see of a loaded hub.
fn shown(hub: &Hub) -> String {
    let problems: Vec<String> = hub.problems.iter().map(|p| p.to_string()).collect();
    format!("{}\n{hub:?}", problems.join("\n"))
}

/// No canary, and no variable of this process's environment.
fn assert_nothing_leaked(text: &str) {
    assert!(!text.contains(CANARY), "the canary leaked:\n{text}");
    for (name, value) in std::env::vars() {
        if value.len() >= 8 {
            assert!(!text.contains(&format!("{name}={value}")), "{name} from the environment leaked:\n{text}");
        }
    }
}

/// The problem of `file`, as shown.
fn problem_of(hub: &Hub, file: &Path) -> String {
    let found: Vec<String> = hub.problems.iter().filter(|p| p.file == file).map(|p| p.to_string()).collect();
    assert_eq!(found.len(), 1, "one problem for {}: {:#?}", file.display(), hub.problems);
    found[0].clone()
}

/// Runs `f` on another thread; panics if it takes longer than `limit`.
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit).unwrap_or_else(|_| panic!("still running after {limit:?}: it blocked"))
}

#[test]
fn workspace_manifests_that_are_symlinks_to_host_files_are_refused_and_never_quoted() {
    let s = Scene::new();
    let before = s.outside_snapshot();
    let hub_dir = s.ws_hub();
    symlink("/proc/self/environ", hub_dir.join("e.toml")).unwrap();
    symlink(s.outside.join("secret.toml"), hub_dir.join("abs.toml")).unwrap();
    symlink(s.relative_outside("secret.json"), hub_dir.join("rel.json")).unwrap();
    symlink(s.outside.join("dir"), hub_dir.join("folder")).unwrap();
    symlink("/etc/hostname", hub_dir.join("host.yaml")).unwrap();
    // Inside the workspace but outside its hub folder: refused, said exactly.
    write(&s.ws.join("notes/t.json"), &manifest("t", "sh"));
    symlink("../../notes/t.json", hub_dir.join("inside.json")).unwrap();
    let hub = s.load(&[]);
    let text = shown(&hub);
    assert_nothing_leaked(&text);
    assert!(hub.tools.is_empty(), "{text}");
    for name in ["e.toml", "abs.toml", "rel.json", "folder", "host.yaml"] {
        let p = problem_of(&hub, &hub_dir.join(name));
        assert!(p.contains("is a symlink leading outside the workspace; clix does not follow it"), "{p}");
        assert!(p.contains("fix: put the manifest"), "{p}");
    }
    let p = problem_of(&hub, &hub_dir.join("inside.json"));
    assert!(p.contains("is a symlink leading outside the hub folder; clix does not follow it"), "{p}");
    // The same through the runtime, which is what `hub check` prints.
    let config = HubConfig {
        sources: vec![HubSource::workspace(s.ws_hub())],
        load: s.opts(),
        domains: Vec::new(),
        state_dir: s.user_hub.clone(),
        self_test_ttl: Duration::from_secs(1),
        env: std::sync::Arc::new(|_| None),
        audit_log: None,
        shared: None,
        session: "t".into(),
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let rt = runtime.block_on(HubRuntime::load(config, None, Some(&s.workspace())));
    let text: String = rt.problems().iter().map(|p| format!("{p}\n")).collect();
    assert_eq!(rt.problems().len(), 6, "{text}");
    assert_nothing_leaked(&text);
    assert_eq!(s.outside_snapshot(), before, "nothing outside was written");
}

#[test]
fn a_hub_folder_swapped_for_a_symlink_out_is_refused() {
    let s = Scene::new();
    fs::remove_dir_all(s.ws.join(".clix")).unwrap();
    symlink(s.outside.join("dotclix"), s.ws.join(".clix")).unwrap();
    let hub = s.load(&[]);
    let text = shown(&hub);
    assert_nothing_leaked(&text);
    assert!(hub.tools.is_empty(), "{text}");
    let p = problem_of(&hub, &s.ws_hub());
    assert!(p.contains("cannot read hub folder") && p.contains("leads outside the workspace"), "{p}");

    fs::remove_file(s.ws.join(".clix")).unwrap();
    fs::create_dir(s.ws.join(".clix")).unwrap();
    symlink(s.outside.join("dotclix/hub"), s.ws_hub()).unwrap();
    let hub = s.load(&[]);
    assert_nothing_leaked(&shown(&hub));
    assert!(problem_of(&hub, &s.ws_hub()).contains("leads outside the workspace"));
}

#[test]
fn a_fifo_manifest_is_a_problem_not_a_hang() {
    let s = Scene::new();
    mkfifo(&s.ws_hub().join("evil.json"));
    fs::create_dir_all(s.ws_hub().join("t")).unwrap();
    mkfifo(&s.ws_hub().join("t/manifest.toml"));
    exe(&s.ws_hub().join("good/run"), "echo '{}'");
    write(&s.ws_hub().join("good/manifest.json"), &manifest("good", "./run"));
    // The user's own folder is read the same way.
    mkfifo(&s.user_hub.join("mine.yaml"));
    let (ws_hub, user_hub) = (s.ws_hub(), s.user_hub.clone());
    // A FIFO opened for reading blocks until a writer comes, which none
    // does: the load must end at all (60 s, a safety net), not be quick.
    let hub = within(Duration::from_secs(60), move || s.load(&[HubSource::explicit(&s.user_hub)]));
    for file in [ws_hub.join("evil.json"), ws_hub.join("t/manifest.toml"), user_hub.join("mine.yaml")] {
        let p = problem_of(&hub, &file);
        assert!(p.contains("is a FIFO, not a regular file"), "{p}");
    }
    let names: Vec<&str> = hub.tools.iter().map(|t| t.manifest.name.as_str()).collect();
    assert_eq!(names, ["good"], "the other tools still load");
}

/// Loads manifests that are `/dev/zero` in a child process with 1 GiB of
/// address space: reading one whole would fail the child.
#[test]
fn dev_zero_is_refused_under_a_memory_limit() {
    const CHILD: &str = "CLIX_TEST_HUB_DEV_ZERO_CHILD";
    if std::env::var_os(CHILD).is_some() {
        let s = Scene::new();
        symlink("/dev/zero", s.ws_hub().join("zero.json")).unwrap();
        symlink("/dev/zero", s.user_hub.join("zero.toml")).unwrap();
        let hub = s.load(&[HubSource::explicit(&s.user_hub)]);
        assert!(hub.tools.is_empty());
        assert!(problem_of(&hub, &s.ws_hub().join("zero.json")).contains("symlink leading outside the workspace"));
        assert!(problem_of(&hub, &s.user_hub.join("zero.toml")).contains("symlink leading outside the hub folder"));
        let direct = load_file(&s.user_hub.join("zero.toml"), &s.opts()).unwrap_err();
        assert!(direct[0].message.contains("symlink"), "{direct:?}");
        println!("child: refused");
        return;
    }
    let mut command = std::process::Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", "dev_zero_is_refused_under_a_memory_limit", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1");
    unsafe {
        use std::os::unix::process::CommandExt;
        command.pre_exec(|| {
            let limit = libc::rlimit { rlim_cur: 1 << 30, rlim_max: 1 << 30 };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = command.stdout(std::process::Stdio::piped()).spawn().unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("the load did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.contains("child: refused"), "{:?}\n{stdout}", out.status);
}

#[test]
fn a_workspace_manifest_runs_only_programs_in_the_workspace_or_system_folders() {
    let s = Scene::new();
    let before = s.outside_snapshot();
    let hub_dir = s.ws_hub();
    let host_tool = s.outside.join("bin/tool");
    symlink(&host_tool, hub_dir.join("link")).unwrap();
    let refused: Vec<(&str, String, &str)> = vec![
        ("abs", host_tool.display().to_string(), "is outside the workspace and the system folders"),
        ("rel", s.relative_outside("bin/tool"), "is outside the workspace and the system folders"),
        ("dotdot", format!("/usr/..{}", host_tool.display()), "is outside the workspace and the system folders"),
        ("link", "./link".into(), "leads outside the workspace"),
        ("bare", "only-here".into(), "is on PATH only outside the system folders"),
    ];
    for (name, command, _) in &refused {
        write(&hub_dir.join(format!("{name}.json")), &manifest(name, command));
    }
    exe(&hub_dir.join("inside/run"), "echo '{}'");
    write(&hub_dir.join("inside/manifest.json"), &manifest("inside", "./run"));
    write(&hub_dir.join("system.json"), &manifest("system", "sh"));
    write(&hub_dir.join("system-abs.json"), &manifest("system-abs", "/bin/sh"));
    let hub = s.load(&[]);
    let text = shown(&hub);
    assert_nothing_leaked(&text);
    for (name, _, message) in &refused {
        let p = problem_of(&hub, &hub_dir.join(format!("{name}.json")));
        assert!(p.contains(": command: ") && p.contains(message), "{name}: {p}");
        assert!(p.contains("fix: "), "{name}: {p}");
    }
    let names: Vec<&str> = hub.tools.iter().map(|t| t.manifest.name.as_str()).collect();
    assert_eq!(names, ["inside", "system-abs", "system"], "{text}");
    let inside = hub.get("inside").unwrap();
    assert_eq!(inside.program, hub_dir.join("inside/run"));
    assert!(!inside.trusted);
    assert!(["/usr/bin/sh", "/bin/sh"].contains(&hub.get("system").unwrap().program.to_str().unwrap()));
    assert_eq!(s.outside_snapshot(), before, "nothing outside was written");
}

#[test]
fn workspace_paths_are_never_resolved_on_the_host() {
    let s = Scene::new();
    // `.clix` is a symlink inside the workspace: the tool's folder and
    // program keep the path as written, so what the sandbox mounts and runs
    // is decided in the sandbox, where only the workspace is.
    fs::remove_dir_all(s.ws.join(".clix")).unwrap();
    exe(&s.ws.join("real/hub/t/run"), "echo '{}'");
    write(&s.ws.join("real/hub/t/manifest.json"), &manifest("t", "./run"));
    symlink("real", s.ws.join(".clix")).unwrap();
    let hub = s.load(&[]);
    let tool = hub.get("t").unwrap_or_else(|| panic!("{:#?}", hub.problems));
    assert_eq!(tool.dir, s.ws_hub().join("t"));
    assert_eq!(tool.program, s.ws_hub().join("t/run"));
    assert_eq!(tool.manifest_path, s.ws_hub().join("t/manifest.json"));
}

#[test]
fn the_users_tool_wins_over_the_workspaces_and_the_workspaces_is_reported_shadowed() {
    let s = Scene::new();
    exe(&s.user_hub.join("log-search/run"), "echo '{}'");
    write(&s.user_hub.join("log-search/manifest.json"), &manifest("log-search", "./run"));
    exe(&s.ws_hub().join("log-search/run"), "echo '{}'");
    write(&s.ws_hub().join("log-search/manifest.json"), &manifest("log-search", "./run"));
    let config_dir = s.outside.join("config");
    let user_file = s.user_hub.join("log-search/manifest.json");
    let ws_file = s.ws_hub().join("log-search/manifest.json");
    let in_session_order = hub_sources(Some(&s.ws), &config_dir, std::slice::from_ref(&s.user_hub), None);
    let workspace_first = vec![HubSource::workspace(s.ws_hub()), HubSource::explicit(&s.user_hub)];
    for sources in [in_session_order, workspace_first] {
        let hub = load_hub(&sources, &s.opts(), Some(&s.workspace()));
        assert_eq!(hub.tools.len(), 1);
        assert_eq!(hub.tools[0].manifest_path, user_file);
        assert!(hub.tools[0].trusted);
        let p = problem_of(&hub, &ws_file);
        assert!(
            p.contains(&format!("tool `log-search` from {} is shadowed by {}", ws_file.display(), user_file.display())),
            "{p}"
        );
    }
}

#[test]
fn a_workspace_named_through_a_symlinked_path_still_loads_its_hub() {
    let s = Scene::new();
    exe(&s.ws_hub().join("t/run"), "echo '{}'");
    write(&s.ws_hub().join("t/manifest.json"), &manifest("t", "./run"));
    let link = s.outside.join("ws-link");
    symlink(&s.ws, &link).unwrap();
    let sources = [HubSource::workspace(link.join(".clix/hub"))];
    let hub = load_hub(&sources, &s.opts(), Some(&s.workspace()));
    let tool = hub.get("t").unwrap_or_else(|| panic!("{:#?}", hub.problems));
    assert_eq!(tool.dir, s.ws_hub().join("t"));
    // Without the workspace's handle, nothing of it is read.
    let hub = load_hub(&sources, &s.opts(), None);
    assert!(hub.tools.is_empty() && hub.problems.len() == 1, "{:#?}", hub.problems);
}
