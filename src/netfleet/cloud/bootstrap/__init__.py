"""Bootstrap (provider-neutral): turning an acquired machine into a host the runner can use —
the campaign's SSH keys (:mod:`.hostkeys`), the cloud-init user-data that pins the host key,
installs the engines and arms the dead man's switch (:mod:`.userdata`), and readiness over SSH
(:mod:`.ready`)."""
