"""Each workflow once, free of HTTP and SMTP: the API, the dashboard, the mail plane and
the command line call these with a connection, the settings and their collaborators (a
sender, a limiter, a link maker), and only translate their protocol."""
