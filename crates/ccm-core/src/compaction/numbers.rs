//! Numbers as people read them in banners and error messages.
//!
//! The errors sit below every other compaction module, and their messages print counts the
//! same way the banners do; this leaf is where both take the formatting from, so the errors
//! need not import the report.

/// `n` with a comma every three digits (`3,120`), as banners print token counts.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
