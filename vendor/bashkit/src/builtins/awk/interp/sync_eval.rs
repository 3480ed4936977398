//! clix patch (docs/bashkit-patches.md, "awk expressions without a future
//! per node" and "awk's record loop"): most of a hot awk loop (`s += $1`,
//! `i < n`, `a[i] = i`, `n++`, and the `for`/`while`/`if` around them)
//! never waits for anything. The async evaluator boxes a future for every
//! node (to bound its stack frames), which made allocation and the boxes
//! a third of such a loop. An expression with no function call and no
//! `getline`, and a statement built only of such expressions and of
//! control flow, run here with plain recursion; their semantics are
//! `eval_boxed`'s and `exec_stmt`'s, through the same helpers.

use super::super::ast::{Block, Expr, Stmt, StmtKind};
use super::super::value::Value;
use super::{Flow, Interp, Loc, R, bool_val};
use crate::builtins::awk::regex::AwkRegex;
use std::sync::Arc;

/// Deepest expression evaluated here; deeper ones take the async path,
/// whose boxed frames keep the stack bounded.
const MAX_DEPTH: usize = 64;

/// Whether `e` can be evaluated without awaiting: no call (user or
/// builtin), no `getline`, and not nested deeper than [`MAX_DEPTH`].
pub(in crate::builtins::awk) fn is_sync(e: &Expr) -> bool {
    sync_within(e, MAX_DEPTH)
}

fn sync_within(e: &Expr, depth: usize) -> bool {
    let Some(depth) = depth.checked_sub(1) else {
        return false;
    };
    let all = |es: &[Expr]| es.iter().all(|e| sync_within(e, depth));
    match e {
        Expr::Num(_) | Expr::Str(_) | Expr::Regex(_) | Expr::Var(_) => true,
        Expr::Elem(_, groups) => groups.iter().all(|g| all(g)),
        Expr::Field(x) | Expr::Group(x) | Expr::Neg(x) | Expr::Plus(x) | Expr::Not(x) => {
            sync_within(x, depth)
        }
        Expr::Assign(a, _, b)
        | Expr::Binary(_, a, b)
        | Expr::Cmp(_, a, b)
        | Expr::Match(_, a, b)
        | Expr::And(a, b)
        | Expr::Or(a, b)
        | Expr::Concat(a, b) => sync_within(a, depth) && sync_within(b, depth),
        Expr::Cond(c, a, b) => {
            sync_within(c, depth) && sync_within(a, depth) && sync_within(b, depth)
        }
        Expr::In(subs, arr) => all(subs) && sync_within(arr, depth),
        Expr::IncDec(x, _, _) => sync_within(x, depth),
        Expr::List(items) => all(items),
        Expr::Call(..) | Expr::Indirect(..) | Expr::Builtin(..) | Expr::Getline(..) => false,
    }
}

/// Deepest statement nesting run by [`Interp::exec_sync`]; deeper
/// statements take the async path, whose boxed frames bound the stack.
const MAX_STMT_DEPTH: u8 = 32;

/// `Stmt::sync` for a statement of `kind` whose parts are already parsed:
/// 0 when it may await, else its nesting depth. Expressions must pass
/// [`is_sync`]; statements that write output, call, delete, exit, return
/// or switch are left to the async path.
pub(in crate::builtins::awk) fn sync_depth(kind: &StmtKind) -> u8 {
    sync_nesting(kind)
        .filter(|d| *d <= MAX_STMT_DEPTH)
        .unwrap_or(0)
}

fn sync_nesting(kind: &StmtKind) -> Option<u8> {
    let expr = |e: &Expr| is_sync(e).then_some(0);
    let stmt = |s: &Stmt| (s.sync > 0).then_some(s.sync);
    let block = |b: &Block| b.iter().try_fold(0, |d, s| Some(d.max(stmt(s)?)));
    let inner = match kind {
        StmtKind::Expr(e) => expr(e)?,
        StmtKind::If(c, a, b) => {
            expr(c)?;
            block(a)?.max(b.as_ref().map_or(Some(0), block)?)
        }
        StmtKind::While(c, b) | StmtKind::Do(b, c) => {
            expr(c)?;
            block(b)?
        }
        StmtKind::For(init, c, incr, b) => {
            c.as_ref().map_or(Some(0), expr)?;
            let ends = [init, incr]
                .into_iter()
                .flatten()
                .try_fold(0, |d, s| Some(d.max(stmt(s)?)))?;
            block(b)?.max(ends)
        }
        StmtKind::ForIn(key, arr, b) => {
            expr(key)?;
            expr(arr)?;
            block(b)?
        }
        StmtKind::Block(b) => block(b)?,
        StmtKind::Next | StmtKind::NextFile | StmtKind::Break | StmtKind::Continue => 0,
        StmtKind::Print(..)
        | StmtKind::Printf(..)
        | StmtKind::Exit(_)
        | StmtKind::Return(_)
        | StmtKind::Delete(_)
        | StmtKind::Switch(..) => return None,
    };
    inner.checked_add(1)
}

impl Interp {
    /// `exec_stmt` of a statement with [`sync_depth`] above 0: the same
    /// steps, with no future.
    pub(super) fn exec_sync(&mut self, s: &Stmt) -> R<Flow> {
        self.cur_loc = Some(s.loc);
        self.tick()?;
        match &s.kind {
            StmtKind::Expr(e) => {
                self.eval_sync(e)?;
            }
            StmtKind::If(c, a, b) => {
                if self.eval_sync(c)?.to_bool() {
                    return self.exec_block_sync(a);
                } else if let Some(b) = b {
                    return self.exec_block_sync(b);
                }
            }
            StmtKind::While(c, body) => {
                let mut n = 0;
                while self.eval_sync(c)?.to_bool() {
                    n += 1;
                    self.tick_loop(n)?;
                    match self.exec_block_sync(body)? {
                        Flow::Break => break,
                        Flow::Return(v) => return Ok(Flow::Return(v)),
                        _ => {}
                    }
                }
            }
            StmtKind::Do(body, c) => {
                let mut n = 0;
                loop {
                    n += 1;
                    self.tick_loop(n)?;
                    match self.exec_block_sync(body)? {
                        Flow::Break => break,
                        Flow::Return(v) => return Ok(Flow::Return(v)),
                        _ => {}
                    }
                    if !self.eval_sync(c)?.to_bool() {
                        break;
                    }
                }
            }
            StmtKind::For(init, c, incr, body) => {
                if let Some(i) = init {
                    self.exec_sync(i)?;
                }
                let mut n = 0;
                loop {
                    if let Some(c) = c
                        && !self.eval_sync(c)?.to_bool()
                    {
                        break;
                    }
                    n += 1;
                    self.tick_loop(n)?;
                    match self.exec_block_sync(body)? {
                        Flow::Break => break,
                        Flow::Return(v) => return Ok(Flow::Return(v)),
                        _ => {}
                    }
                    if let Some(i) = incr {
                        self.exec_sync(i)?;
                    }
                }
            }
            StmtKind::ForIn(key, arr, body) => {
                let id = self.array_of_expr_sync(arr)?;
                let keys = self.for_in_keys(id);
                let taken = self.removals;
                let mut n = 0;
                for k in keys {
                    // A key deleted by the body since the keys were taken is skipped.
                    if self.removals != taken && !self.array(id).is_some_and(|a| a.contains(&k)) {
                        continue;
                    }
                    n += 1;
                    self.tick_loop(n)?;
                    let loc = self.resolve_sync(key)?;
                    self.store(loc, Value::from_input(k))?;
                    match self.exec_block_sync(body)? {
                        Flow::Break => break,
                        Flow::Return(v) => return Ok(Flow::Return(v)),
                        _ => {}
                    }
                }
            }
            StmtKind::Block(b) => return self.exec_block_sync(b),
            StmtKind::Next => return Err(super::Unwind::Next),
            StmtKind::NextFile => return Err(super::Unwind::NextFile),
            StmtKind::Break => return Ok(Flow::Break),
            StmtKind::Continue => return Ok(Flow::Continue),
            // `sync_depth` is 0 for these; the async path runs them.
            StmtKind::Print(..)
            | StmtKind::Printf(..)
            | StmtKind::Exit(_)
            | StmtKind::Return(_)
            | StmtKind::Delete(_)
            | StmtKind::Switch(..) => {
                return Err(self.fatal_at(
                    "internal error: an awaiting statement reached the synchronous executor",
                ));
            }
        }
        Ok(Flow::Normal)
    }

    /// `exec_block` of sync statements.
    pub(super) fn exec_block_sync(&mut self, b: &[Stmt]) -> R<Flow> {
        for s in b {
            match self.exec_sync(s)? {
                Flow::Normal => {}
                other => return Ok(other),
            }
        }
        Ok(Flow::Normal)
    }

    /// `eval` of an expression [`is_sync`] accepted.
    pub(super) fn eval_sync(&mut self, e: &Expr) -> R<Value> {
        match e {
            Expr::Num(n) => Ok(Value::Num(*n)),
            Expr::Str(s) => Ok(Value::Str(s.clone())),
            Expr::Var(v) => self.get_var(*v),
            Expr::Regex(id) => {
                let re = self.lit_regex(*id);
                self.rebuild_record()?;
                Ok(bool_val(re.is_match(&self.record)))
            }
            Expr::Elem(..) => {
                let loc = self.resolve_sync(e)?;
                self.load(&loc)
            }
            Expr::Field(i) => {
                let n = self.num_sync(i)?;
                let idx = self.field_index(n)?;
                self.get_field(idx)
            }
            Expr::Group(inner) => self.eval_sync(inner),
            Expr::Assign(lv, None, rhs) => {
                let loc = self.resolve_sync(lv)?;
                let r = self.eval_sync(rhs)?;
                self.assign_at(loc, None, r)
            }
            Expr::Assign(lv, Some(op), rhs) => {
                let loc = self.resolve_sync(lv)?;
                let r = self.num_sync(rhs)?;
                self.assign_num_at(loc, *op, r)
            }
            Expr::Neg(_) | Expr::Plus(_) | Expr::Binary(..) => Ok(Value::Num(self.num_sync(e)?)),
            Expr::Not(x) => Ok(bool_val(!self.eval_sync(x)?.to_bool())),
            Expr::Cmp(op, a, b) => {
                let x = self.eval_sync(a)?;
                let y = self.eval_sync(b)?;
                Ok(self.compare_values(*op, &x, &y))
            }
            Expr::Match(neg, a, b) => {
                let s = self.eval_sync(a)?;
                let s = self.to_str(&s);
                let re = self.regex_operand_sync(b)?;
                Ok(bool_val(re.is_match(&s) != *neg))
            }
            Expr::And(a, b) => Ok(bool_val(
                self.eval_sync(a)?.to_bool() && self.eval_sync(b)?.to_bool(),
            )),
            Expr::Or(a, b) => Ok(bool_val(
                self.eval_sync(a)?.to_bool() || self.eval_sync(b)?.to_bool(),
            )),
            Expr::Cond(c, a, b) => {
                if self.eval_sync(c)?.to_bool() {
                    self.eval_sync(a)
                } else {
                    self.eval_sync(b)
                }
            }
            Expr::Concat(a, b) => {
                let x = self.eval_sync(a)?;
                let s = self.to_str(&x);
                let y = self.eval_sync(b)?;
                self.concat(s, &y)
            }
            Expr::In(subs, arr) => {
                let key = self.subscript_sync(subs)?;
                let id = self.array_of_expr_sync(arr)?;
                Ok(bool_val(self.array(id).is_some_and(|a| a.contains(&key))))
            }
            Expr::IncDec(lv, delta, prefix) => {
                let loc = self.resolve_sync(lv)?;
                self.step_at(loc, *delta, *prefix)
            }
            Expr::List(items) => Ok(Value::Str(self.subscript_sync(items)?)),
            // `is_sync` never accepts these; the async path reports them the same way.
            Expr::Call(..) | Expr::Indirect(..) | Expr::Builtin(..) | Expr::Getline(..) => {
                Err(self.fatal_at("internal error: a call reached the synchronous evaluator"))
            }
        }
    }

    /// `eval_sync(e)?.to_num()` without building the value: a field or a
    /// variable holding text is read in place rather than cloned (clix
    /// patch, "awk's record loop": `s += $1` cloned each record's field).
    fn num_sync(&mut self, e: &Expr) -> R<f64> {
        match e {
            Expr::Num(n) => Ok(*n),
            Expr::Var(v) => self.var_num(*v),
            Expr::Field(i) => {
                let n = self.num_sync(i)?;
                let idx = self.field_index(n)?;
                self.field_num(idx)
            }
            Expr::Group(inner) => self.num_sync(inner),
            Expr::Neg(x) => Ok(-self.num_sync(x)?),
            Expr::Plus(x) => self.num_sync(x),
            Expr::Binary(op, a, b) => {
                let x = self.num_sync(a)?;
                let y = self.num_sync(b)?;
                self.arith(*op, x, y)
            }
            _ => Ok(self.eval_sync(e)?.to_num()),
        }
    }

    /// `resolve` of an lvalue whose parts are synchronous.
    fn resolve_sync(&mut self, lv: &Expr) -> R<Loc> {
        match lv {
            Expr::Var(v) => Ok(Loc::Var(*v)),
            Expr::Elem(v, groups) => {
                let mut id = self.array_of_var(*v)?;
                let (last, path) = groups.split_last().ok_or(super::Unwind::Fatal)?;
                for g in path {
                    let k = self.subscript_sync(g)?;
                    id = self.subarray(id, k)?;
                }
                let key = self.subscript_sync(last)?;
                Ok(Loc::Elem(id, key))
            }
            Expr::Field(e) => {
                let i = self.eval_sync(e)?.to_num();
                Ok(Loc::Field(self.field_index(i)?))
            }
            Expr::Group(inner) => self.resolve_sync(inner),
            _ => Err(self.fatal_at("assignment to a non-lvalue")),
        }
    }

    /// `subscript` of synchronous parts.
    fn subscript_sync(&mut self, g: &[Expr]) -> R<String> {
        if let [only] = g {
            let v = self.eval_sync(only)?;
            return Ok(self.to_str(&v));
        }
        let mut key = String::new();
        for (i, e) in g.iter().enumerate() {
            let v = self.eval_sync(e)?;
            self.push_key_part(&mut key, i, &v)?;
        }
        Ok(key)
    }

    /// `array_of_expr` with synchronous subscripts.
    fn array_of_expr_sync(&mut self, e: &Expr) -> R<super::ArrId> {
        match e {
            Expr::Var(v) => self.array_of_var(*v),
            Expr::Elem(v, groups) => {
                let mut id = self.array_of_var(*v)?;
                for g in groups {
                    let key = self.subscript_sync(g)?;
                    id = self.subarray(id, key)?;
                }
                Ok(id)
            }
            Expr::Group(inner) => self.array_of_expr_sync(inner),
            _ => Err(self.fatal_at("attempt to use a scalar value as array")),
        }
    }

    /// `regex_operand` of a synchronous operand.
    fn regex_operand_sync(&mut self, e: &Expr) -> R<Arc<AwkRegex>> {
        match e {
            Expr::Regex(id) => Ok(self.lit_regex(*id)),
            Expr::Group(inner) if matches!(**inner, Expr::Regex(_)) => {
                self.regex_operand_sync(inner)
            }
            other => {
                let v = self.eval_sync(other)?;
                let s = self.to_str(&v);
                self.dyn_regex(&s)
            }
        }
    }
}
