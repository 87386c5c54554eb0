"""Tables, repositories, the mail server, the access service client and the templates."""
