//! A private sshd on 127.0.0.1, with its host key, a client key that it
//! accepts and one it does not, all in a temporary folder: the `clip`
//! tests and the `clip` benchmark reach a real ssh server through it.

#![allow(clippy::expect_used)] // a harness that cannot start sshd has failed its caller; each expect says what failed

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running sshd, stopped when dropped.
pub struct Sshd {
    dir: tempfile::TempDir,
    port: u16,
    child: Child,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Sshd {
    /// Whether sshd and ssh-keygen are installed (openssh-server and -client).
    pub fn installed() -> bool {
        Path::new("/usr/sbin/sshd").exists() && which("ssh-keygen").is_some()
    }

    /// Starts one, listening once this returns. Panics, saying what failed,
    /// when it cannot (see [`Sshd::installed`]).
    pub fn start() -> Sshd {
        // sshd's privilege separation folder, which the package makes at boot.
        let _ = std::fs::create_dir_all("/run/sshd");
        let dir = tempfile::tempdir().expect("a temporary folder for sshd");
        let p = dir.path();
        for key in ["host_key", "id", "other"] {
            let status = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(p.join(key))
                .status()
                .expect("ssh-keygen runs (apt-get install openssh-client)");
            assert!(status.success(), "ssh-keygen failed for {key}");
        }
        std::fs::copy(p.join("id.pub"), p.join("authorized_keys")).expect("authorized_keys");
        let port = free_port();
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {dir}/host_key\nPidFile {dir}/sshd.pid\n\
             AuthorizedKeysFile {dir}/authorized_keys\nStrictModes no\nUsePAM no\nPermitRootLogin prohibit-password\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n\
             MaxSessions 50\nMaxStartups 50\nLogLevel ERROR\nSubsystem sftp internal-sftp\n",
            dir = p.display()
        );
        std::fs::write(p.join("sshd_config"), config).expect("sshd_config");
        let child = Command::new("/usr/sbin/sshd")
            .args(["-D", "-e", "-f"])
            .arg(p.join("sshd_config"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sshd starts (apt-get install openssh-server)");
        // A safety net for a busy machine: the wait ends once it listens.
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "sshd did not start listening on {port}");
            std::thread::sleep(Duration::from_millis(20));
        }
        Sshd { dir, port, child }
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its folder: keys, config, and the client's known hosts.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The client key it accepts.
    pub fn identity(&self) -> PathBuf {
        self.dir().join("id")
    }

    /// A client key it does not accept.
    pub fn stranger_identity(&self) -> PathBuf {
        self.dir().join("other")
    }

    /// The client's `-o` options: known hosts in its folder, the new host
    /// key accepted, only the given identity offered.
    pub fn client_options(&self) -> Vec<String> {
        vec![
            format!("UserKnownHostsFile={}", self.dir().join("known_hosts").display()),
            "GlobalKnownHostsFile=/dev/null".into(),
            "StrictHostKeyChecking=accept-new".into(),
            "IdentitiesOnly=yes".into(),
        ]
    }
}

/// The user to log in as: the one running the tests.
pub fn whoami() -> String {
    let out = Command::new("id").arg("-un").output().expect("id runs");
    String::from_utf8(out.stdout).expect("a UTF-8 user name").trim().to_string()
}

/// A port nothing listens on (just now).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("its address").port()
}

/// `program`'s path on PATH.
pub fn which(program: &str) -> Option<PathBuf> {
    std::env::var("PATH").ok()?.split(':').map(|d| Path::new(d).join(program)).find(|p| p.exists())
}
