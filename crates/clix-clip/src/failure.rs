//! Why an environment could not be reached, told from what the client
//! said, with what to check.

use crate::config::{Environment, Target};

/// What failed when reaching an environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The host name does not resolve.
    Dns,
    /// Nothing listens on the port.
    Refused,
    /// No answer in time.
    Timeout,
    /// The host refused the key (or there is none).
    Auth,
    /// The host's key is unknown or changed.
    HostKey,
    /// The container or pod does not exist or is not running.
    NotRunning,
    /// The client program (`ssh`, `docker`, `kubectl`) is not installed.
    NoClient(String),
    /// The local folder or the sandbox is not there.
    Local(String),
    /// Something else; the client's own words.
    Other(String),
}

impl Failure {
    /// Reads a client's stderr (and exit code) after a failed connection;
    /// `None` when it does not look like a connection failure.
    pub fn classify(env: &Environment, exit_code: i32, stderr: &str) -> Option<Failure> {
        let low = stderr.to_ascii_lowercase();
        let has = |needles: &[&str]| needles.iter().any(|n| low.contains(n));
        match &env.target {
            Target::Ssh(_) => {
                // ssh exits 255 for its own errors; other codes are the remote command's.
                if exit_code != 255 {
                    return None;
                }
                Some(
                    if has(&["could not resolve hostname", "name or service not known", "temporary failure in name"]) {
                        Failure::Dns
                    } else if has(&["connection refused"]) {
                        Failure::Refused
                    } else if has(&["timed out", "no route to host", "network is unreachable"]) {
                        Failure::Timeout
                    } else if has(&["host key verification failed", "remote host identification has changed"]) {
                        Failure::HostKey
                    } else if has(&[
                        "permission denied",
                        "too many authentication failures",
                        "no supported authentication",
                    ]) {
                        Failure::Auth
                    } else if has(&[
                        "connection closed",
                        "connection reset",
                        "kex_exchange_identification",
                        "broken pipe",
                    ]) {
                        Failure::Other(first_line(stderr))
                    } else {
                        return None;
                    },
                )
            }
            // Only the client's own wording counts: the command's stderr
            // may well say "connection refused" about something else.
            Target::Container(_) => {
                let daemon = has(&["error response from daemon", "error: no such object", "error: no such container"]);
                if daemon && has(&["no such container", "is not running", "no such object"]) {
                    Some(Failure::NotRunning)
                } else if has(&["cannot connect to the docker daemon", "cannot connect to podman"]) {
                    Some(Failure::Refused)
                } else if has(&["permission denied while trying to connect to the docker daemon"]) {
                    Some(Failure::Auth)
                } else {
                    None
                }
            }
            Target::Kubernetes(_) => {
                let server = has(&["unable to connect to the server", "the connection to the server"]);
                if has(&["error from server (notfound)", "container not found", "unable to upgrade connection"]) {
                    Some(Failure::NotRunning)
                } else if server && has(&["no such host"]) {
                    Some(Failure::Dns)
                } else if server && has(&["i/o timeout", "timed out", "deadline exceeded"]) {
                    Some(Failure::Timeout)
                } else if server {
                    Some(Failure::Refused)
                } else if has(&["error from server (forbidden)", "(unauthorized)", "you must be logged in"]) {
                    Some(Failure::Auth)
                } else {
                    None
                }
            }
            Target::Local(_) => None,
        }
    }

    /// One short phrase: `DNS`, `connection refused`, `authentication`.
    pub fn label(&self) -> String {
        match self {
            Failure::Dns => "DNS: the host name does not resolve".into(),
            Failure::Refused => "connection refused".into(),
            Failure::Timeout => "timed out connecting".into(),
            Failure::Auth => "authentication refused".into(),
            Failure::HostKey => "host key not trusted".into(),
            Failure::NotRunning => "not running".into(),
            Failure::NoClient(program) => format!("{program} is not installed"),
            Failure::Local(why) => why.clone(),
            Failure::Other(words) => words.clone(),
        }
    }

    /// What the person should check, for this environment.
    pub fn check(&self, env: &Environment) -> String {
        let name = &env.name;
        match (self, &env.target) {
            (Failure::Dns, Target::Ssh(s)) => {
                format!("check `host = \"{}\"` in the [[clip]] entry {name}, and this machine's DNS", s.host)
            }
            (Failure::Refused, Target::Ssh(s)) => format!(
                "is sshd running on {} and listening on port {}? check `host`/`port` of [[clip]] {name}",
                s.host,
                s.port.unwrap_or(22)
            ),
            (Failure::Timeout, Target::Ssh(s)) => {
                format!("is {} up, and does a firewall let this machine reach its port?", s.host)
            }
            (Failure::Auth, Target::Ssh(s)) => format!(
                "the key was refused: check `user` ({}) and `identity_file` of [[clip]] {name}, and that the key is \
                 in the host's authorized_keys; clip never asks for a password (BatchMode)",
                s.user.as_deref().unwrap_or("ssh's default")
            ),
            (Failure::HostKey, Target::Ssh(s)) => format!(
                "{} is not in known_hosts or its key changed: connect once by hand (ssh {}) to check and record it",
                s.host, s.host
            ),
            (Failure::NotRunning, Target::Container(c)) => {
                format!("start it, or fix `container` of [[clip]] {name}: {} ps -a lists them", c.engine)
            }
            (Failure::Refused | Failure::Auth, Target::Container(c)) => {
                format!("is the {} daemon running, and may this user reach its socket?", c.engine)
            }
            (Failure::NotRunning, Target::Kubernetes(_)) => {
                format!("check `pod`/`selector`, `namespace` and `container` of [[clip]] {name}: kubectl get pods")
            }
            (Failure::NoClient(program), _) => format!("install {program} on this machine (it runs on the host)"),
            (_, Target::Kubernetes(_)) => {
                format!("check the cluster and `context` of [[clip]] {name}: kubectl cluster-info")
            }
            (Failure::Local(_), Target::Local(_)) => {
                format!("check `path` of [[clip]] {name}, and that the sandbox works: clix run 'sandbox status'")
            }
            _ => format!("check the [[clip]] entry {name} (clix config show)"),
        }
    }
}

fn first_line(text: &str) -> String {
    text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("failed").to_string()
}
