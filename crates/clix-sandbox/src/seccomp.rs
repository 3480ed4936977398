//! The syscall filter every sandboxed program runs under.
//!
//! Inside the sandbox the program is uid 1000 of a user namespace, and that
//! uid is whoever runs clix outside: root, when clix runs as root. A file it
//! makes in the workspace is then owned by the host's root, so a setuid or
//! setgid bit on it, or a file capability, would hand root to any local user
//! who can reach the workspace. The kernel lets a file's owner set those
//! bits, so this filter refuses them, with `EPERM`:
//!
//! - `chmod`, `fchmod`, `fchmodat`, `fchmodat2` whose mode has `S_ISUID` or `S_ISGID`;
//! - `mknod`, `mknodat` of a character or block device, or with `S_ISUID`/`S_ISGID`
//!   (`mknod` also makes regular files);
//! - `open`, `openat`, `creat` that create a file (`O_CREAT` or `O_TMPFILE`) with `S_ISUID`/`S_ISGID`;
//! - `unshare` and `clone` with `CLONE_NEWUSER`: in a nested user namespace the
//!   program would hold `CAP_SETFCAP` over its own files and could write a
//!   `security.capability` xattr (e.g. `cap_setuid=ep`) that the host honours.
//!
//! Calls whose arguments a filter cannot see (they sit in a struct in the
//! program's memory) or that run other calls out of its sight answer
//! `ENOSYS`, so libc and programs fall back to the calls above: `openat2`
//! (→ `openat`), `clone3` (→ `clone`), and `io_uring_setup`/`_enter`/`_register`
//! (io_uring's own `openat` would skip the filter). The kernel keyring calls
//! `add_key`, `request_key` and `keyctl` answer `ENOSYS` too: keyrings are not
//! namespaced, so the login's session keyring would be readable and writable
//! from the sandbox (programs treat a missing keyring facility as "no keys").
//!
//! On x86_64 the x32 numbers of the same calls are covered too, and calls of
//! another ABI (32-bit `int 0x80`) kill the process: the filter only knows
//! the native numbers. Everything else is allowed.
//!
//! The filter is compiled with `seccompiler` to classic BPF and handed to
//! bubblewrap (`--seccomp FD`), which installs it just before it runs the
//! program. A sandbox that cannot build it refuses to run.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch, sock_filter,
};

const S_ISUID: u64 = 0o4000;
const S_ISGID: u64 = 0o2000;
const S_IFMT: u64 = 0o170000;
const S_IFCHR: u64 = 0o020000;
const S_IFBLK: u64 = 0o060000;
const O_CREAT: u64 = libc::O_CREAT as u64;
/// `O_TMPFILE` without the `O_DIRECTORY` it includes: the bit that makes an unnamed file.
const O_TMPFILE_BIT: u64 = (libc::O_TMPFILE & !libc::O_DIRECTORY) as u64;
const CLONE_NEWUSER: u64 = libc::CLONE_NEWUSER as u64;

/// Syscalls added after the arch tables were unified: the same number everywhere.
const SYS_IO_URING_SETUP: i64 = 425;
const SYS_IO_URING_ENTER: i64 = 426;
const SYS_IO_URING_REGISTER: i64 = 427;
const SYS_CLONE3: i64 = 435;
const SYS_OPENAT2: i64 = 437;
const SYS_FCHMODAT2: i64 = 452;

/// x86_64's x32 ABI: the same calls with this bit set in the number.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: i64 = 0x4000_0000;

/// One refused call: its number and the rules (any of which refuses it).
type Denied = (i64, Vec<SeccompRule>);

/// The BPF program as bubblewrap reads it (`struct sock_filter` array,
/// native byte order), built once per process.
pub(crate) fn program_bytes() -> Result<&'static [u8], String> {
    static PROGRAM: OnceLock<Result<Vec<u8>, String>> = OnceLock::new();
    PROGRAM.get_or_init(|| build(std::env::consts::ARCH).map(|p| to_bytes(&p))).as_deref().map_err(Clone::clone)
}

/// The whole filter for `arch` (`std::env::consts::ARCH`), or why it cannot be built.
pub(crate) fn build(arch: &str) -> Result<BpfProgram, String> {
    let unsupported = || {
        format!(
            "the sandbox's syscall filter cannot be built for this CPU architecture ({arch}; \
             supported: x86_64, aarch64, riscv64), and without it a sandboxed program could make \
             setuid files in the workspace, so no program runs. Fix: run clix on a supported \
             architecture, or set sandbox.mode = \"host\" in config.toml to run programs UNSANDBOXED"
        )
    };
    let target = TargetArch::try_from(arch).map_err(|_| unsupported())?;
    if arch != std::env::consts::ARCH {
        // The syscall numbers below are this build's: a filter for another
        // arch would refuse the wrong calls.
        return Err(unsupported());
    }
    let (denied, missing) = syscalls().map_err(|e| e.to_string())?.ok_or_else(unsupported)?;
    let filter_error = |e: seccompiler::BackendError| format!("cannot build the sandbox's syscall filter: {e}");
    let deny = SeccompFilter::new(
        denied.into_iter().collect::<BTreeMap<_, _>>(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        target,
    )
    .map_err(filter_error)?;
    let nosys = SeccompFilter::new(
        missing.into_iter().map(|nr| (nr, Vec::new())).collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        target,
    )
    .map_err(filter_error)?;
    let deny: BpfProgram = deny.try_into().map_err(filter_error)?;
    let nosys: BpfProgram = nosys.try_into().map_err(filter_error)?;
    Ok(then(nosys, deny))
}

/// One program that runs `first` and, where `first` would allow the call,
/// goes on with `second`. Each of `first`'s "allow" returns becomes a jump
/// to its end; cBPF jumps only go forward and the count of instructions is
/// unchanged, so every other jump of both programs keeps its target.
fn then(mut first: BpfProgram, second: BpfProgram) -> BpfProgram {
    const BPF_RET_K: u16 = 0x06;
    const BPF_JMP_JA: u16 = 0x05;
    let len = first.len();
    for (i, ins) in first.iter_mut().enumerate() {
        if ins.code == BPF_RET_K && ins.k == libc::SECCOMP_RET_ALLOW {
            *ins = sock_filter { code: BPF_JMP_JA, jt: 0, jf: 0, k: (len - i - 1) as u32 };
        }
    }
    first.extend(second);
    first
}

fn to_bytes(program: &[sock_filter]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for ins in program {
        bytes.extend_from_slice(&ins.code.to_ne_bytes());
        bytes.push(ins.jt);
        bytes.push(ins.jf);
        bytes.extend_from_slice(&ins.k.to_ne_bytes());
    }
    bytes
}

/// A rule: every `(argument, mask, value)` holds, i.e. `arg & mask == value`
/// on the low 32 bits (modes and flags are 32-bit `int`s).
fn rule(conditions: &[(u8, u64, u64)]) -> Result<SeccompRule, seccompiler::BackendError> {
    let conditions = conditions
        .iter()
        .map(|&(arg, mask, value)| {
            SeccompCondition::new(arg, SeccompCmpArgLen::Dword, SeccompCmpOp::MaskedEq(mask), value)
        })
        .collect::<Result<Vec<_>, _>>()?;
    SeccompRule::new(conditions)
}

/// Mode argument `mode` has the setuid or the setgid bit.
fn setid(mode: u8) -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
    Ok(vec![rule(&[(mode, S_ISUID, S_ISUID)])?, rule(&[(mode, S_ISGID, S_ISGID)])?])
}

/// A `mknod` mode argument: a device, or setuid/setgid.
fn mknod(mode: u8) -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
    let mut rules = setid(mode)?;
    rules.push(rule(&[(mode, S_IFMT, S_IFCHR)])?);
    rules.push(rule(&[(mode, S_IFMT, S_IFBLK)])?);
    Ok(rules)
}

/// An `open` that creates a file (`O_CREAT` or `O_TMPFILE` in `flags`) with setuid/setgid in `mode`.
fn open(flags: u8, mode: u8) -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
    let mut rules = Vec::new();
    for create in [O_CREAT, O_TMPFILE_BIT] {
        for bit in [S_ISUID, S_ISGID] {
            rules.push(rule(&[(flags, create, create), (mode, bit, bit)])?);
        }
    }
    Ok(rules)
}

/// `clone`/`unshare` flags in argument 0 ask for a new user namespace.
fn new_user_ns() -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
    Ok(vec![rule(&[(0, CLONE_NEWUSER, CLONE_NEWUSER)])?])
}

type Table = Option<(Vec<Denied>, Vec<i64>)>;

/// This build's refused calls (with their rules) and the calls answered
/// `ENOSYS`; `None` on an architecture the filter does not know.
fn syscalls() -> Result<Table, seccompiler::BackendError> {
    let missing = vec![
        SYS_OPENAT2,
        SYS_CLONE3,
        SYS_IO_URING_SETUP,
        SYS_IO_URING_ENTER,
        SYS_IO_URING_REGISTER,
        // The kernel keyrings are not namespaced: the login's session keyring
        // (Kerberos tickets, ecryptfs keys, cached passwords) would be read
        // and written through them. Flatpak refuses them the same way.
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_keyctl,
    ];
    #[cfg(target_arch = "x86_64")]
    {
        let denied: Vec<Denied> = vec![
            (libc::SYS_chmod, setid(1)?),
            (libc::SYS_fchmod, setid(1)?),
            (libc::SYS_fchmodat, setid(2)?),
            (SYS_FCHMODAT2, setid(2)?),
            (libc::SYS_mknod, mknod(1)?),
            (libc::SYS_mknodat, mknod(2)?),
            (libc::SYS_open, open(1, 2)?),
            (libc::SYS_openat, open(2, 3)?),
            // creat() always creates: its mode alone decides.
            (libc::SYS_creat, setid(1)?),
            (libc::SYS_unshare, new_user_ns()?),
            (libc::SYS_clone, new_user_ns()?),
        ];
        let x32 = |list: &[i64]| list.iter().map(|nr| nr | X32_SYSCALL_BIT).collect::<Vec<_>>();
        let mut all = denied.clone();
        all.extend(denied.into_iter().map(|(nr, rules)| (nr | X32_SYSCALL_BIT, rules)));
        let mut nosys = missing.clone();
        nosys.extend(x32(&missing));
        Ok(Some((all, nosys)))
    }
    #[cfg(any(target_arch = "aarch64", target_arch = "riscv64"))]
    {
        // The generic syscall table: no chmod, mknod, open or creat, only the *at forms.
        let denied: Vec<Denied> = vec![
            (libc::SYS_fchmod, setid(1)?),
            (libc::SYS_fchmodat, setid(2)?),
            (SYS_FCHMODAT2, setid(2)?),
            (libc::SYS_mknodat, mknod(2)?),
            (libc::SYS_openat, open(2, 3)?),
            (libc::SYS_unshare, new_user_ns()?),
            (libc::SYS_clone, new_user_ns()?),
        ];
        Ok(Some((denied, missing)))
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "riscv64")))]
    {
        let _ = (missing, setid, mknod, open, new_user_ns);
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A classic-BPF interpreter for the instructions seccompiler emits,
    /// run on a `struct seccomp_data`: the filter's verdicts without a kernel.
    fn verdict(program: &[sock_filter], arch: u32, nr: i64, args: [u64; 6]) -> u32 {
        let mut data = Vec::new();
        data.extend_from_slice(&(nr as u32).to_le_bytes());
        data.extend_from_slice(&arch.to_le_bytes());
        data.extend_from_slice(&0u64.to_le_bytes());
        for a in args {
            data.extend_from_slice(&a.to_le_bytes());
        }
        let (mut acc, mut pc) = (0u32, 0usize);
        loop {
            let ins = &program[pc];
            pc += 1;
            match ins.code {
                0x20 => acc = u32::from_le_bytes(data[ins.k as usize..ins.k as usize + 4].try_into().unwrap()),
                0x54 => acc &= ins.k,
                0x06 => return ins.k,
                0x05 => pc += ins.k as usize,
                0x15 | 0x25 | 0x35 => {
                    let taken = match ins.code {
                        0x15 => acc == ins.k,
                        0x25 => acc > ins.k,
                        _ => acc >= ins.k,
                    };
                    pc += (if taken { ins.jt } else { ins.jf }) as usize;
                }
                other => panic!("instruction {other:#x} not modelled"),
            }
        }
    }

    const EPERM: u32 = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
    const ENOSYS: u32 = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;
    const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_filter_refuses_setid_modes_devices_and_user_namespaces_and_allows_the_rest() {
        const ARCH: u32 = 0xC000_003E; // AUDIT_ARCH_X86_64
        let p = build("x86_64").unwrap();
        let v = |nr: i64, args: [u64; 6]| verdict(&p, ARCH, nr, args);
        let x32 = |nr: i64| nr | X32_SYSCALL_BIT;
        let o_creat = libc::O_CREAT as u64 | libc::O_WRONLY as u64;
        let o_tmpfile = libc::O_TMPFILE as u64 | libc::O_WRONLY as u64;
        for (what, nr, args, expected) in [
            ("chmod 4755", libc::SYS_chmod, [0, 0o4755, 0, 0, 0, 0], EPERM),
            ("chmod 2755", libc::SYS_chmod, [0, 0o2755, 0, 0, 0, 0], EPERM),
            ("chmod 755", libc::SYS_chmod, [0, 0o755, 0, 0, 0, 0], ALLOW),
            ("chmod 1777 (sticky)", libc::SYS_chmod, [0, 0o1777, 0, 0, 0, 0], ALLOW),
            ("fchmod 4755", libc::SYS_fchmod, [3, 0o4755, 0, 0, 0, 0], EPERM),
            ("fchmod 644", libc::SYS_fchmod, [3, 0o644, 0, 0, 0, 0], ALLOW),
            ("fchmodat 6755", libc::SYS_fchmodat, [3, 0, 0o6755, 0, 0, 0], EPERM),
            ("fchmodat 700", libc::SYS_fchmodat, [3, 0, 0o700, 0, 0, 0], ALLOW),
            ("fchmodat2 4755", SYS_FCHMODAT2, [3, 0, 0o4755, 0, 0, 0], EPERM),
            ("x32 chmod 4755", x32(libc::SYS_chmod), [0, 0o4755, 0, 0, 0, 0], EPERM),
            ("mknod chr", libc::SYS_mknod, [0, 0o20600, 0x103, 0, 0, 0], EPERM),
            ("mknodat blk", libc::SYS_mknodat, [3, 0, 0o60600, 0x800, 0, 0], EPERM),
            ("mknod regular setuid", libc::SYS_mknod, [0, 0o104755, 0, 0, 0, 0], EPERM),
            ("mknod fifo", libc::SYS_mknod, [0, 0o10644, 0, 0, 0, 0], ALLOW),
            ("mknodat fifo", libc::SYS_mknodat, [3, 0, 0o10644, 0, 0, 0], ALLOW),
            ("open creat 4755", libc::SYS_open, [0, o_creat, 0o4755, 0, 0, 0], EPERM),
            ("open creat 644", libc::SYS_open, [0, o_creat, 0o644, 0, 0, 0], ALLOW),
            // Without O_CREAT the mode argument is garbage the kernel ignores.
            ("open read, junk mode", libc::SYS_open, [0, 0, 0o6777, 0, 0, 0], ALLOW),
            ("openat creat 2755", libc::SYS_openat, [3, 0, o_creat, 0o2755, 0, 0], EPERM),
            ("openat tmpfile 4755", libc::SYS_openat, [3, 0, o_tmpfile, 0o4755, 0, 0], EPERM),
            ("openat creat 600", libc::SYS_openat, [3, 0, o_creat, 0o600, 0, 0], ALLOW),
            ("creat 4755", libc::SYS_creat, [0, 0o4755, 0, 0, 0, 0], EPERM),
            ("creat 644", libc::SYS_creat, [0, 0o644, 0, 0, 0, 0], ALLOW),
            ("unshare user", libc::SYS_unshare, [CLONE_NEWUSER | libc::CLONE_NEWNS as u64, 0, 0, 0, 0, 0], EPERM),
            ("unshare mount", libc::SYS_unshare, [libc::CLONE_NEWNS as u64, 0, 0, 0, 0, 0], ALLOW),
            ("clone user", libc::SYS_clone, [CLONE_NEWUSER | 17, 0, 0, 0, 0, 0], EPERM),
            ("clone thread", libc::SYS_clone, [0x3d0f00, 0, 0, 0, 0, 0], ALLOW),
            ("openat2", SYS_OPENAT2, [3, 0, 0, 24, 0, 0], ENOSYS),
            ("x32 openat2", x32(SYS_OPENAT2), [3, 0, 0, 24, 0, 0], ENOSYS),
            ("clone3", SYS_CLONE3, [0, 88, 0, 0, 0, 0], ENOSYS),
            ("io_uring_setup", SYS_IO_URING_SETUP, [8, 0, 0, 0, 0, 0], ENOSYS),
            ("keyctl read of the session keyring", libc::SYS_keyctl, [11, (-3i64) as u64, 0, 0, 0, 0], ENOSYS),
            ("add_key", libc::SYS_add_key, [0, 0, 0, 0, (-3i64) as u64, 0], ENOSYS),
            ("request_key", libc::SYS_request_key, [0, 0, 0, 0, 0, 0], ENOSYS),
            ("read", libc::SYS_read, [0, 0, 0, 0, 0, 0], ALLOW),
            ("execve", libc::SYS_execve, [0, 0, 0, 0, 0, 0], ALLOW),
        ] {
            assert_eq!(v(nr, args), expected, "{what}");
        }
        // Another ABI's numbers mean other calls: that process is killed.
        assert_eq!(verdict(&p, 0x4000_0003, 15, [0, 0o4755, 0, 0, 0, 0]), libc::SECCOMP_RET_KILL_PROCESS);
        assert!(program_bytes().unwrap().len() == p.len() * 8);
    }

    #[test]
    fn an_unknown_architecture_is_an_error_that_says_what_to_do() {
        for arch in ["powerpc64", "s390x", "x86"] {
            let e = build(arch).unwrap_err();
            assert!(e.contains(arch) && e.contains("sandbox.mode"), "{e}");
        }
        let other = if std::env::consts::ARCH == "aarch64" { "x86_64" } else { "aarch64" };
        assert!(build(other).is_err(), "a filter for another arch than this build's");
    }

    #[test]
    fn then_keeps_the_first_verdict_unless_it_allows() {
        let ret = |k| sock_filter { code: 0x06, jt: 0, jf: 0, k };
        let jeq = |k, jt, jf| sock_filter { code: 0x15, jt, jf, k };
        let ld_nr = sock_filter { code: 0x20, jt: 0, jf: 0, k: 0 };
        // first: nr 1 -> ENOSYS, else allow; second: nr 2 -> EPERM, else allow.
        let first = vec![ld_nr.clone(), jeq(1, 0, 1), ret(ENOSYS), ret(ALLOW)];
        let second = vec![ld_nr, jeq(2, 0, 1), ret(EPERM), ret(ALLOW)];
        let p = then(first, second);
        assert_eq!(verdict(&p, 0, 1, [0; 6]), ENOSYS);
        assert_eq!(verdict(&p, 0, 2, [0; 6]), EPERM);
        assert_eq!(verdict(&p, 0, 3, [0; 6]), ALLOW);
    }
}
