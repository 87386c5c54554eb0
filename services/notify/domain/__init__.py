"""Pure: deliveries, their keys and states, the mails they become. No I/O."""
