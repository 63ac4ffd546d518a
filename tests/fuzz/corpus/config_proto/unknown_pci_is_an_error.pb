
roced/v1
NodeConfig"
0000:af:00.0¨F