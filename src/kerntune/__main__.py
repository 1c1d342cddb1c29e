from kerntune.cli.app import main

main()
