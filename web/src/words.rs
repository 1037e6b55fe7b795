//! Counts in words: "1 message", "2 messages", never "1 messages".

/// `count` followed by the singular or the plural noun.
pub fn count(count: usize, one: &str, many: &str) -> String {
    if count == 1 {
        format!("1 {one}")
    } else {
        format!("{count} {many}")
    }
}

/// A number of tokens: "1 token", "339 tokens".
pub fn tokens(count: usize) -> String {
    self::count(count, "token", "tokens")
}

/// A number of messages.
pub fn messages(count: usize) -> String {
    self::count(count, "message", "messages")
}

/// A number of turns.
pub fn turns(count: usize) -> String {
    self::count(count, "turn", "turns")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(count(1, "model", "models"), "1 model");
        assert_eq!(count(0, "model", "models"), "0 models");
        assert_eq!(count(2, "model", "models"), "2 models");
        assert_eq!(tokens(1), "1 token");
        assert_eq!(messages(12), "12 messages");
        assert_eq!(turns(1), "1 turn");
    }
}
