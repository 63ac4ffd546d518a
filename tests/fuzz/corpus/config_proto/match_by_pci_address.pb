
roced/v1
NodeConfig"
0000:3B:00.0¨F