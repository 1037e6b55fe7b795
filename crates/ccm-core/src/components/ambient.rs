//! The ambient log: messages exchanged while no effort was active.

use crate::model::Message;

/// The ambient log of a session. A session opened from a store has the tail of it that its
/// working set needs; `offset` older messages are stored but not loaded. Read it through
/// [`crate::Session::ambient`].
#[derive(Debug, Clone, Default)]
pub struct Ambient {
    /// The loaded messages, oldest first.
    messages: Vec<Message>,
    /// Tokens of every stored ambient message, loaded or not.
    tokens: u64,
    /// How many older messages are stored but not loaded.
    offset: u64,
}

impl Ambient {
    /// The whole ambient log (an imported document has all of it); its tokens are counted
    /// from the messages.
    pub(crate) fn whole(messages: Vec<Message>) -> Ambient {
        let tokens = messages.iter().map(|m| u64::from(m.tokens)).sum();
        Ambient {
            messages,
            tokens,
            offset: 0,
        }
    }

    /// The tail of a stored ambient log: `messages` are the newest of `stored` messages, which
    /// hold `tokens` tokens in all.
    pub(crate) fn tail(messages: Vec<Message>, stored: u64, tokens: u64) -> Ambient {
        Ambient {
            offset: stored.saturating_sub(messages.len() as u64),
            messages,
            tokens,
        }
    }

    /// The loaded ambient log (messages exchanged while no effort was active). A session
    /// created in memory or imported from a document has all of it; one opened from a store
    /// has the tail its working set needs ([`Ambient::offset`] older ones are stored).
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// How many older ambient messages are stored but not loaded.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Tokens of every stored ambient message, loaded or not.
    pub(crate) fn tokens(&self) -> u64 {
        self.tokens
    }

    /// Every stored ambient message, loaded or not.
    pub(crate) fn stored(&self) -> u64 {
        self.offset + self.messages.len() as u64
    }

    /// Takes back the messages of `turn` and later (they sit at the end of the log) and sets
    /// the token total to what it was before `turn`: undoing a turn.
    pub(crate) fn undo_from(&mut self, turn: u64, tokens_before: u64) {
        while self.messages.last().is_some_and(|m| m.turn >= turn) {
            self.messages.pop();
        }
        self.tokens = tokens_before;
    }

    /// Where the ambient window starts in the loaded messages: `(by count, by count and
    /// tokens)`. Messages between the two are among the last `window` exchanges but left out
    /// for the token budget. An exchange is the messages of one turn; the walk reads at most
    /// `window` exchanges from the end, so it costs the window, not the log.
    pub(crate) fn window_bounds(&self, window: u32, token_budget: u32) -> (usize, usize) {
        let messages = &self.messages;
        let budget = u64::from(token_budget);
        let mut exchanges = 0;
        let mut tokens = 0u64;
        let mut by_count = messages.len();
        let mut by_budget = messages.len();
        let mut end = messages.len();
        while end > 0 && exchanges < window {
            let turn = messages[end - 1].turn;
            let mut start = end - 1;
            while start > 0 && messages[start - 1].turn == turn {
                start -= 1;
            }
            let exchange: u64 = messages[start..end]
                .iter()
                .map(|m| u64::from(m.tokens))
                .sum();
            exchanges += 1;
            tokens += exchange;
            by_count = start;
            // The newest exchange always stays; older ones stay while they fit, contiguously.
            if by_budget == end && (exchanges == 1 || tokens <= budget) {
                by_budget = start;
            }
            end = start;
        }
        (by_count, by_budget)
    }

    /// Appends an exchange; returns the positions of its messages.
    pub(crate) fn push_exchange(&mut self, user: Message, assistant: Message) -> [usize; 2] {
        self.tokens += u64::from(user.tokens) + u64::from(assistant.tokens);
        let first = self.messages.len();
        self.messages.push(user);
        self.messages.push(assistant);
        [first, first + 1]
    }
}
