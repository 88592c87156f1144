from heard.cli import app

app(prog_name="heard")
