"""The wire protocols of other speech services and voice platforms that heard answers, one
module each: ``assemblyai`` (AssemblyAI's Universal-Streaming, ``/v3/ws``) and ``twilio``
(Twilio Media Streams, ``/v1/twilio``) on the live sockets' session loop
(``heard.server.session``); ``wyoming`` (Home Assistant's, over TCP: ``heard wyoming``)."""
